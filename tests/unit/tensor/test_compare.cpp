// compare(): max_abs and rel_l2 between the claim's output and the convolution.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "metrics/compare.hpp"
#include "tensor/tensor.hpp"

using attnconv::compare;
using attnconv::Vector;

TEST_CASE("compare: max_abs and rel_l2 by hand", "[compare]") {
  // differences (0, 3, -4): max_abs 4, ||d|| = 5, ||expected|| = 12 -> rel_l2 5/12
  const Vector<double> expected{0, 0, 12}, actual{0, 3, 8};
  const auto d = compare(actual, expected);
  CHECK(d.max_abs == 4);
  CHECK(d.rel_l2 == Approx(5.0 / 12).epsilon(1e-15));
  CHECK(compare(expected, expected).rel_l2 == 0);
  // expected = 0: the absolute l2 norm
  CHECK(compare(Vector<float>{3, 4}, Vector<float>{0, 0}).rel_l2 == 5);
  CHECK_THROWS_AS(compare(Vector<double>{1, 2}, Vector<double>{1}), std::invalid_argument);
}

TEST_CASE("compare: a NaN anywhere makes both metrics NaN", "[compare]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Vector<double> expected{0, 1, 2};
  for (std::size_t at = 0; at < 3; ++at) {
    Vector<double> actual = expected;
    actual(at) = nan;
    INFO("NaN at " << at);
    const auto d = compare(actual, expected);
    CHECK(std::isnan(d.max_abs));  // was lost when a finite difference came after it
    CHECK(std::isnan(d.rel_l2));
  }
  const auto inf = compare(Vector<double>{INFINITY, 1}, Vector<double>{0, 1});
  CHECK(std::isinf(inf.max_abs));
}

TEST_CASE("compare: rel_l2 of finite values near the top of the double range is finite", "[compare]") {
  // squares of 1e300 overflow; the scaled sums do not
  const Vector<double> expected{1e300, -2e300, 0}, actual{1e300, -2e300, 1e299};
  const auto d = compare(actual, expected);
  CHECK(d.max_abs == 1e299);
  CHECK(d.rel_l2 == Approx(0.1 / std::sqrt(5.0)).epsilon(1e-14));  // 1e299 / (sqrt(5) 1e300)
  CHECK(compare(Vector<double>{3e300, 4e300}, Vector<double>{0, 0}).rel_l2 == Approx(5e300).epsilon(1e-15));
  // and an infinite difference stays infinite or NaN: never a finite distance
  const auto overflow = compare(Vector<double>{1.7e308, -1.7e308}, Vector<double>{-1.7e308, 1.7e308});
  CHECK_FALSE(std::isfinite(overflow.max_abs));
  CHECK_FALSE(std::isfinite(overflow.rel_l2));
}
