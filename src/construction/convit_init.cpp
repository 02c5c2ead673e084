#include "construction/convit_init.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace attnconv {

std::size_t convit_kernel_size(std::size_t heads) {
  const std::size_t k = std::size_t(std::lround(std::sqrt(double(heads))));
  if (k * k != heads || k == 0)
    throw std::invalid_argument("ConViT's local init needs a square number of heads, not " + std::to_string(heads));
  return k;
}

Matrix<double> convit_centers(std::size_t heads) {
  const std::size_t k = convit_kernel_size(heads);
  const double c = (double(k) - 1) / 2;
  Matrix<double> out = xt::zeros<double>({heads, std::size_t(2)});
  for (std::size_t h1 = 0; h1 < k; ++h1)
    for (std::size_t h2 = 0; h2 < k; ++h2) {
      const std::size_t h = h1 + k * h2;
      out(h, 0) = double(h1) - c, out(h, 1) = double(h2) - c;
    }
  return out;
}

template <class T> Matrix<T> convit_v_pos(std::size_t heads, double locality_strength) {
  const Matrix<double> centers = convit_centers(heads);
  Matrix<T> out = xt::zeros<T>({heads, std::size_t(3)});
  for (std::size_t h = 0; h < heads; ++h) {
    out(h, 0) = T(locality_strength * 2 * centers(h, 0));
    out(h, 1) = T(locality_strength * 2 * centers(h, 1));
    out(h, 2) = T(-locality_strength);
  }
  return out;
}

template Matrix<float> convit_v_pos(std::size_t, double);
template Matrix<double> convit_v_pos(std::size_t, double);

}  // namespace attnconv
