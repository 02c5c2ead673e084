#pragma once
// How far the claim's output (actual) is from the convolution (expected).
// Accumulated in double whatever the dtype, so the metric adds no round-off.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <xtensor/xarray.hpp>

namespace attnconv {

struct Difference {
  double max_abs = 0;  // max |actual - expected|
  double rel_l2 = 0;   // ||actual - expected||_2 / ||expected||_2  (absolute when expected = 0)
};

// 2^k with 2^k <= m < 2^(k+1) (1 when m is 0, inf or NaN): dividing by it is
// exact, so the sums of squares below are the plain ones, only kept from
// overflowing when the values are near 1e154 or above (LAPACK's dnrm2 scales
// likewise).
inline double power_of_two_below(double m) { return m > 0 && std::isfinite(m) ? std::ldexp(1.0, std::ilogb(m)) : 1.0; }

template <class E1, class E2> Difference compare(const E1& actual, const E2& expected) {
  if (actual.shape() != expected.shape()) throw std::invalid_argument("compare: shapes differ");
  Difference d;
  double expected_max = 0;
  auto a = actual.cbegin();
  for (auto e = expected.cbegin(); e != expected.cend(); ++e, ++a) {
    const double difference = double(*a) - double(*e);
    // A NaN anywhere makes max_abs NaN, and it stays NaN (a later finite
    // difference must not overwrite it: NaN never compares <=).
    if (!std::isnan(d.max_abs) && !(std::abs(difference) <= d.max_abs)) d.max_abs = std::abs(difference);
    expected_max = std::max(expected_max, std::abs(double(*e)));
  }
  const double difference_scale = power_of_two_below(d.max_abs), expected_scale = power_of_two_below(expected_max);
  double diff2 = 0, norm2 = 0;  // of difference / difference_scale and expected / expected_scale
  a = actual.cbegin();
  for (auto e = expected.cbegin(); e != expected.cend(); ++e, ++a) {
    const double difference = (double(*a) - double(*e)) / difference_scale, value = double(*e) / expected_scale;
    diff2 += difference * difference;
    norm2 += value * value;
  }
  d.rel_l2 = norm2 > 0 ? difference_scale / expected_scale * std::sqrt(diff2 / norm2) : difference_scale * std::sqrt(diff2);
  return d;
}

}  // namespace attnconv
