#include "tensor/tensor.hpp"

#include <algorithm>

#include "parallel/threads.hpp"

namespace attnconv {

namespace {
// b[p * c + k] = a[k * n + p] for p < n, k < c (a is c x n, b is n x c), in
// blocks of 16 columns of a, so that the 16 rows of b being written stay in
// cache while every row of a is read; the blocks on the engine threads. A copy:
// the same numbers in any order.
template <class T> void transpose(const T* a, std::size_t c, std::size_t n, T* b) {
  constexpr std::size_t block = 16;
  parallel_for((n + block - 1) / block, [&](std::size_t chunk, std::size_t) {
    const std::size_t p0 = chunk * block, p1 = std::min(n, p0 + block);
    for (std::size_t k = 0; k < c; ++k)
      for (std::size_t p = p0; p < p1; ++p) b[p * c + k] = a[k * n + p];
  });
}
}  // namespace

template <class T> Matrix<T> image_to_tokens(const Image<T>& x) {
  const std::size_t channels = x.shape(0), height = x.shape(1), width = x.shape(2);
  Matrix<T> tokens({height * width, channels});
  transpose(x.data(), channels, height * width, tokens.data());
  return tokens;
}

template <class T> Image<T> tokens_to_image(const Matrix<T>& tokens, std::size_t height, std::size_t width) {
  const std::size_t channels = tokens.shape(1);
  Image<T> x({channels, height, width});
  transpose(tokens.data(), height * width, channels, x.data());
  return x;
}

namespace {
// Every slice w[:, :, p, q] of w, at p K2 + q, as a matrix of `shape` holding entry (o, i) at
// at(o, i): one pass over w in blocks of 16 output channels, on the engine threads. A copy.
template <class T, class At>
std::vector<Matrix<T>> copy_kernel_slices(const Kernel<T>& w, std::array<std::size_t, 2> shape, At at) {
  const std::size_t c_out = w.shape(0), c_in = w.shape(1), positions = w.shape(2) * w.shape(3);
  std::vector<Matrix<T>> slices;
  for (std::size_t pq = 0; pq < positions; ++pq) slices.emplace_back(shape);
  constexpr std::size_t block = 16;
  parallel_for((c_out + block - 1) / block, [&](std::size_t chunk, std::size_t) {
    const std::size_t o0 = chunk * block, o1 = std::min(c_out, o0 + block);
    for (std::size_t i = 0; i < c_in; ++i)
      for (std::size_t o = o0; o < o1; ++o) {
        const T* taps = w.data() + (o * c_in + i) * positions;  // w[o, i, :, :]
        for (std::size_t pq = 0; pq < positions; ++pq) slices[pq].data()[at(o, i)] = taps[pq];
      }
  });
  return slices;
}
}  // namespace

template <class T> std::vector<Matrix<T>> kernel_slices_t(const Kernel<T>& w) {
  const std::size_t c_out = w.shape(0), c_in = w.shape(1);
  return copy_kernel_slices(w, {c_in, c_out}, [c_out](std::size_t o, std::size_t i) { return i * c_out + o; });
}

template <class T> std::vector<Matrix<T>> kernel_slices(const Kernel<T>& w) {
  const std::size_t c_out = w.shape(0), c_in = w.shape(1);
  return copy_kernel_slices(w, {c_out, c_in}, [c_in](std::size_t o, std::size_t i) { return o * c_in + i; });
}

template Matrix<float> image_to_tokens(const Image<float>&);
template Matrix<double> image_to_tokens(const Image<double>&);
template Image<float> tokens_to_image(const Matrix<float>&, std::size_t, std::size_t);
template Image<double> tokens_to_image(const Matrix<double>&, std::size_t, std::size_t);
template std::vector<Matrix<float>> kernel_slices_t(const Kernel<float>&);
template std::vector<Matrix<double>> kernel_slices_t(const Kernel<double>&);
template std::vector<Matrix<float>> kernel_slices(const Kernel<float>&);
template std::vector<Matrix<double>> kernel_slices(const Kernel<double>&);

}  // namespace attnconv
