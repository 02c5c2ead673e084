#include "tensor/tensor.hpp"

namespace attnconv {

template <class T> Matrix<T> image_to_tokens(const Image<T>& x) {
  const std::size_t channels = x.shape(0), height = x.shape(1), width = x.shape(2);
  Matrix<T> tokens({height * width, channels});
  for (std::size_t c = 0; c < channels; ++c)
    for (std::size_t i = 0; i < height; ++i)
      for (std::size_t j = 0; j < width; ++j) tokens(i * width + j, c) = x(c, i, j);
  return tokens;
}

template <class T> Image<T> tokens_to_image(const Matrix<T>& tokens, std::size_t height, std::size_t width) {
  const std::size_t channels = tokens.shape(1);
  Image<T> x({channels, height, width});
  for (std::size_t c = 0; c < channels; ++c)
    for (std::size_t i = 0; i < height; ++i)
      for (std::size_t j = 0; j < width; ++j) x(c, i, j) = tokens(i * width + j, c);
  return x;
}

template Matrix<float> image_to_tokens(const Image<float>&);
template Matrix<double> image_to_tokens(const Image<double>&);
template Image<float> tokens_to_image(const Matrix<float>&, std::size_t, std::size_t);
template Image<double> tokens_to_image(const Matrix<double>&, std::size_t, std::size_t);

}  // namespace attnconv
