#pragma once
// How far the claim's output (actual) is from the convolution (expected).
// Accumulated in double whatever the dtype, so the metric adds no round-off.
#include <cmath>
#include <stdexcept>
#include <xtensor/xarray.hpp>

namespace attnconv {

struct Difference {
  double max_abs = 0;  // max |actual - expected|
  double rel_l2 = 0;   // ||actual - expected||_2 / ||expected||_2  (absolute when expected = 0)
};

template <class E1, class E2> Difference compare(const E1& actual, const E2& expected) {
  if (actual.shape() != expected.shape()) throw std::invalid_argument("compare: shapes differ");
  Difference d;
  double diff2 = 0, norm2 = 0;
  auto a = actual.cbegin();
  for (auto e = expected.cbegin(); e != expected.cend(); ++e, ++a) {
    const double difference = double(*a) - double(*e);
    // A NaN anywhere makes max_abs NaN, and it stays NaN (a later finite
    // difference must not overwrite it: NaN never compares <=).
    if (!std::isnan(d.max_abs) && !(std::abs(difference) <= d.max_abs)) d.max_abs = std::abs(difference);
    diff2 += difference * difference;
    norm2 += double(*e) * double(*e);
  }
  d.rel_l2 = norm2 > 0 ? std::sqrt(diff2 / norm2) : std::sqrt(diff2);
  return d;
}

}  // namespace attnconv
