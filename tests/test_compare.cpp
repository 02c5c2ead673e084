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
