#include "border_band.hpp"

#include <algorithm>
#include <cmath>

namespace attnconv {

template <class T> xt::xtensor<double, 2> pixel_difference(const Image<T>& a, const Image<T>& b) {
  xt::xtensor<double, 2> diff = xt::zeros<double>({a.shape(1), a.shape(2)});
  for (std::size_t o = 0; o < a.shape(0); ++o)
    for (std::size_t i = 0; i < a.shape(1); ++i)
      for (std::size_t j = 0; j < a.shape(2); ++j) {
        const double d = std::abs(double(a(o, i, j)) - double(b(o, i, j)));
        diff(i, j) = std::isnan(d) ? d : std::max(diff(i, j), d);  // NaN never agrees
      }
  return diff;
}

template xt::xtensor<double, 2> pixel_difference(const Image<float>&, const Image<float>&);
template xt::xtensor<double, 2> pixel_difference(const Image<double>&, const Image<double>&);

int BorderBand::error(const std::array<int, 4>& expected) const {
  int total = exceptions;
  if (!sides) {
    for (int e : expected) total += e;
    return total + 1;  // no pixel agrees: no interior found
  }
  for (std::size_t s = 0; s < 4; ++s) total += std::abs((*sides)[s] - expected[s]);
  return total;
}

json BorderBand::sides_json() const { return sides ? json(*sides) : json(nullptr); }

BorderBand measure_band(const xt::xtensor<double, 2>& difference, double threshold) {
  const int height = int(difference.shape(0)), width = int(difference.shape(1));
  const auto agrees = [&](int i, int j) { return difference(std::size_t(i), std::size_t(j)) <= threshold; };
  int top = height, bottom = -1, left = width, right = -1;
  for (int i = 0; i < height; ++i)
    for (int j = 0; j < width; ++j)
      if (agrees(i, j)) top = std::min(top, i), bottom = std::max(bottom, i), left = std::min(left, j), right = std::max(right, j);
  BorderBand band;
  if (bottom >= 0) band.sides = std::array<int, 4>{top, height - 1 - bottom, left, width - 1 - right};
  for (int i = 0; i < height; ++i)
    for (int j = 0; j < width; ++j) {
      const bool inside = bottom >= 0 && i >= top && i <= bottom && j >= left && j <= right;
      const double d = difference(std::size_t(i), std::size_t(j));
      double& worst = inside ? band.interior_max : band.band_max;
      worst = std::isnan(d) ? d : std::max(worst, d);
      band.exceptions += bottom >= 0 && inside != agrees(i, j);
    }
  return band;
}

}  // namespace attnconv
