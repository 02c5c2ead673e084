// The finite-alpha leak eps(alpha) = 4 s (1 + s), its use of the smallest
// eigenvalue for the generalised quadratic encoding, and alpha_min.
#include <catch2/catch.hpp>
#include <cmath>

#include "construction/finite_alpha.hpp"
#include "construction/theorem1.hpp"

using namespace attnconv;

TEST_CASE("eps(alpha) = 4 s (1 + s) stays positive where (1 + 2s)^2 - 1 cancels", "[finite_alpha]") {
  const double s1 = std::exp(-1.0) + std::exp(-4.0) + std::exp(-9.0) + std::exp(-16.0) + std::exp(-25.0) + std::exp(-36.0);
  CHECK(attention_leak(1.0) == Approx(4 * s1 * (1 + s1)).epsilon(1e-12));
  CHECK(attention_leak(40.0) > 0);
  CHECK(attention_leak(40.0) == Approx(4 * std::exp(-40.0)).epsilon(1e-12));
  CHECK(attention_leak(20.0) < attention_leak(10.0));
}

TEST_CASE("random precisions are SPD with unit smallest eigenvalue, reproducibly", "[finite_alpha]") {
  const auto a = random_precisions(7, 16), b = random_precisions(7, 16);
  for (std::size_t h = 0; h < a.size(); ++h) {
    CHECK(a[h].a11 == b[h].a11);
    CHECK(a[h].smallest_eigenvalue() == Approx(1.0).epsilon(1e-12));
    CHECK(a[h].a11 * a[h].a22 - a[h].a12 * a[h].a12 >= 1.0 - 1e-12);  // det = lambda2 >= 1
  }
}

TEST_CASE("the leak of a head with precision alpha A is at most eps(alpha lambda_min)", "[finite_alpha]") {
  // 1 - P_{q, q+Delta} computed directly on a grid of keys around the target.
  for (const Precision2& a : random_precisions(3, 8))
    for (double alpha : {0.5, 1.0, 2.0, 4.0, 8.0}) {
      double total = 0;
      for (int m1 = -30; m1 <= 30; ++m1)
        for (int m2 = -30; m2 <= 30; ++m2)
          total += std::exp(-alpha * (a.a11 * m1 * m1 + 2 * a.a12 * m1 * m2 + a.a22 * m2 * m2));
      const double leak = 1 - 1 / total;
      CHECK(leak <= attention_leak(alpha * a.smallest_eigenvalue()) * (1 + 1e-12));
    }
}

TEST_CASE("alpha_min is the first alpha whose bound meets the tolerance", "[finite_alpha]") {
  FiniteAlphaBound bound;
  bound.head_scale = 3.0;
  bound.abs_scale = 5.0;
  bound.longest_sum = 100;
  bound.unit_roundoff = 1.1e-16;
  const double a = alpha_min(bound, 1e-6);
  REQUIRE(std::isfinite(a));
  CHECK(bound(a) <= 1e-6);
  CHECK(bound(a * (1 - 1e-6)) > 1e-6);
  CHECK(a == Approx(std::log(2 * 3.0 * 4 / 1e-6)).epsilon(1e-3));
  CHECK(std::isnan(alpha_min(bound, 1e-20)));  // under the round-off floor
}
