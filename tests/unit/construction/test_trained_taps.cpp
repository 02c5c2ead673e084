// The per-head mean offset, tap and leak of measure_convolutional, and kernel
// "auto"'s smallest_odd_window, on attention built by hand on a 5 x 5 grid
// (one sample, no extra token), where every number is a count of queries:
//  head 0 puts all its attention on q + (1, 1) where that key exists (16 of the
//    25 queries), else on q itself: mean offset (16/25)(1, 1), tap [1, 1],
//    leak 9/25;
//  head 1 puts 1/2 on q and 1/2 on q + (0, −2) where it exists (15 queries;
//    else all on q): mean offset (0, −2 · 15/50) = (0, −0.6), tap [0, −1] — a
//    tap it never attends to (leak 1): the tap is the nearest to the mean, not
//    the mode.
// Window attention (the odd K x K window centred on each query, mean over
// queries and heads): K = 1 holds (9/25 + (1/2 · 15 + 10)/25) / 2 = 0.53,
// K = 3 holds (1 + (1/2 · 15 + 10)/25) / 2 = 0.85, K = 5 holds everything.
#include <catch2/catch.hpp>

#include "construction/trained_attention.hpp"

using namespace attnconv;

namespace {

constexpr int G = 5;

xt::xtensor<double, 4> hand_built() {
  xt::xtensor<double, 4> p = xt::zeros<double>({1, 2, G * G, G * G});
  const auto at = [](int r, int c) { return std::size_t(r * G + c); };
  for (int r = 0; r < G; ++r)
    for (int c = 0; c < G; ++c) {
      const std::size_t q = at(r, c);
      if (r + 1 < G && c + 1 < G) p(0, 0, q, at(r + 1, c + 1)) = 1;
      else p(0, 0, q, q) = 1;
      if (c - 2 >= 0) {
        p(0, 1, q, q) = 0.5;
        p(0, 1, q, at(r, c - 2)) = 0.5;
      } else {
        p(0, 1, q, q) = 1;
      }
    }
  return p;
}

}  // namespace

TEST_CASE("Mean offsets, taps and leaks of hand-built heads are the query counts'", "[trained_taps]") {
  const xt::xtensor<double, 4> p = hand_built();
  const std::size_t t = G * G, d = 2;
  const xt::xtensor<double, 3> x = xt::ones<double>({std::size_t(1), t, d});
  xt::xtensor<double, 3> m = xt::zeros<double>({std::size_t(2), d, d});
  m(0, 0, 0) = m(1, 1, 1) = 1;
  const Vector<double> b = xt::zeros<double>({d});
  // y = Σ_h M_h Σ_k P_h x_k + b for ones: every output is 1.
  const xt::xtensor<double, 3> y = xt::ones<double>({std::size_t(1), t, d});
  const TokenGrid grid{.extra = 0, .h = G, .w = G};
  const ConvolutionalMeasure cm = measure_convolutional(x, y, p, m, b, grid, {3, 3});
  REQUIRE(cm.mean_offset.size() == 2);
  CHECK(cm.mean_offset[0][0] == Approx(16.0 / 25).epsilon(1e-14));
  CHECK(cm.mean_offset[0][1] == Approx(16.0 / 25).epsilon(1e-14));
  CHECK(cm.mean_offset[1][0] == Approx(0.0).margin(1e-15));
  CHECK(cm.mean_offset[1][1] == Approx(-0.6).epsilon(1e-14));
  CHECK(cm.tap[0] == std::array<int, 2>{1, 1});
  CHECK(cm.tap[1] == std::array<int, 2>{0, -1});
  CHECK(cm.leak[0] == Approx(9.0 / 25).epsilon(1e-14));
  CHECK(cm.leak[1] == Approx(1.0).epsilon(1e-14));
}

TEST_CASE("kernel auto: the smallest odd window holding the mass, the largest when none does", "[trained_taps]") {
  const xt::xtensor<double, 4> p = hand_built();
  const TokenGrid grid{.extra = 0, .h = G, .w = G};
  CHECK(window_attention(p, grid, 1) == Approx(0.53).epsilon(1e-14));
  CHECK(window_attention(p, grid, 3) == Approx(0.85).epsilon(1e-14));
  CHECK(window_attention(p, grid, 5) == Approx(1.0).epsilon(1e-14));
  const AutoWindow half = smallest_odd_window(p, grid, 0.5);
  CHECK(half.kernel == std::array<int, 2>{1, 1});
  CHECK(half.reached);
  const AutoWindow most = smallest_odd_window(p, grid, 0.8);
  CHECK(most.kernel == std::array<int, 2>{3, 3});
  CHECK(most.held == Approx(0.85).epsilon(1e-14));
  const AutoWindow nine = smallest_odd_window(p, grid, 0.9);
  CHECK(nine.kernel == std::array<int, 2>{5, 5});
  // A 4 x 6 grid: the largest odd square that fits is 3 x 3; mass 1 is not reached by it.
  xt::xtensor<double, 4> wide = xt::zeros<double>({1, 1, 24, 24});
  for (std::size_t q = 0; q < 24; ++q) wide(0, 0, q, (q + 12) % 24) = 1;  // two rows away, never within 1
  const AutoWindow none = smallest_odd_window(wide, {.extra = 0, .h = 4, .w = 6}, 1.0);
  CHECK(none.kernel == std::array<int, 2>{3, 3});
  CHECK_FALSE(none.reached);
  CHECK(none.held == Approx(0.0).margin(1e-15));
}
