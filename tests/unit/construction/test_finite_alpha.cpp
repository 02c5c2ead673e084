// The finite-alpha leak eps(alpha) = 4 s (1 + s), its use of the smallest
// eigenvalue for the generalised quadratic encoding, and alpha_min (bit for bit
// that of the full computation).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "construction/finite_alpha.hpp"
#include "construction/theorem1.hpp"
#include "tensor/random.hpp"

#include <xtensor/xview.hpp>

using namespace attnconv;

TEST_CASE("eps(alpha) = 4 s (1 + s) stays positive where (1 + 2s)^2 - 1 cancels", "[finite_alpha]") {
  const double s1 = std::exp(-1.0) + std::exp(-4.0) + std::exp(-9.0) + std::exp(-16.0) + std::exp(-25.0) + std::exp(-36.0);
  CHECK(attention_leak(1.0) == Approx(4 * s1 * (1 + s1)).epsilon(1e-12));
  CHECK(attention_leak(40.0) > 0);
  CHECK(attention_leak(40.0) == Approx(4 * std::exp(-40.0)).epsilon(1e-12));
  CHECK(attention_leak(20.0) < attention_leak(10.0));
}

namespace {
// s(alpha) = sum_{n>=1} e^{-alpha n^2} in long double, smallest terms first
// with Kahan compensation, over every term above 1e-22 of the largest: ~1e-18
// relative, the reference attention_leak is held to.
long double reference_tail(long double alpha) {
  const long double last = std::ceil(std::sqrt(51.0L / alpha)) + 1;  // e^{-alpha n^2} < 1e-22 beyond
  long double sum = 0, carry = 0;
  for (long double n = last; n >= 1; --n) {
    const long double y = std::exp(-alpha * n * n) - carry, t = sum + y;
    carry = (t - sum) - y;
    sum = t;
  }
  return sum;
}
}  // namespace

TEST_CASE("eps(alpha) to 1e-12 relative for alpha from 1e-12 to 1e3", "[finite_alpha]") {
  for (const double alpha : {1e-12, 1e-11, 3e-10, 1e-8, 2e-7, 1e-6, 1e-4, 0.01, 0.3, 0.999, 1.0, 1.001, 2.0, 7.5, 30.0,
                             100.0, 1000.0}) {
    const long double s = reference_tail(alpha);
    const double eps = double(4 * s * (1 + s));  // 0 for alpha = 1e3: e^{-1000} underflows a double
    INFO("alpha = " << alpha);
    CHECK(std::abs(attention_leak(alpha) - eps) <= 1e-12 * eps);
  }
  // Known value: theta(pi) = sum_{n in Z} e^{-pi n^2} = pi^{1/4} / Gamma(3/4).
  const long double pi = 3.141592653589793238462643383279502884L;
  const long double s_pi = (std::pow(pi, 0.25L) / std::tgamma(0.75L) - 1) / 2;
  CHECK(double(std::abs(attention_leak(double(pi)) - 4 * s_pi * (1 + s_pi)) / (4 * s_pi * (1 + s_pi))) < 1e-12);
  // Where the old sum stopped at n < 4096 it was too small: alpha = 1e-9 needs ~2e5 terms.
  CHECK(attention_leak(1e-9) > 4 * 2.8e4 * 2.8e4);
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

namespace {
// max_k |X_k M_h|_inf and max_k (|X_k| |W_val^h| |W_out^h|)_inf of every head, in plain long double loops.
struct ExactScales {
  std::vector<long double> value, abs;
};
ExactScales exact_scales(const MhsaLayer<double>& layer, const Matrix<double>& x) {
  const std::size_t d_h = layer.head_dim(), d_in = layer.in_dim(), d_out = layer.out_dim();
  ExactScales out;
  for (std::size_t h = 0; h < layer.heads.size(); ++h) {
    const auto& w_val = layer.heads[h].w_val;
    long double value = 0, abs = 0;
    for (std::size_t k = 0; k < x.shape(0); ++k)
      for (std::size_t o = 0; o < d_out; ++o) {
        long double s = 0, a = 0;
        for (std::size_t i = 0; i < d_in; ++i)
          for (std::size_t e = 0; e < d_h; ++e) {
            const long double w = (long double)w_val(i, e) * layer.w_out(h * d_h + e, o);
            s += x(k, i) * w;
            a += std::fabs((long double)x(k, i)) * std::fabs((long double)w_val(i, e)) * std::fabs(layer.w_out(h * d_h + e, o));
          }
        value = std::max(value, std::fabs(s));
        abs = std::max(abs, a);
      }
    out.value.push_back(value);
    out.abs.push_back(abs);
  }
  return out;
}
}  // namespace

TEST_CASE("the bound's scales, from float32 products, are upper bounds of the exact ones within 4 (D_in + 3) u",
          "[finite_alpha]") {
  Random rng(7);
  const std::size_t height = 9, width = 11, c_in = 6, c_out = 5;
  Kernel<double> w = rng.uniform_tensor<double, 4>({c_out, c_in, 3, 3}) - 0.5;
  xt::view(w, xt::all(), xt::all(), 1, 2) = 0.0;  // tap (1, 2): its head is silent
  Theorem1Options options;
  options.heads = 10, options.head_dim = 5, options.alpha = 8;  // head 9: beyond the kernel, silent
  const MhsaLayer<double> layer = theorem1_layer<double>(w, std::nullopt, options);
  std::vector<std::optional<std::array<int, 2>>> targets(10);
  for (int h = 0; h < 9; ++h) targets[std::size_t(h)] = target_shift(h / 3, h % 3, {3, 3}, {1, 1});
  const double u = std::ldexp(1.0, -24);

  SECTION("tokens from 2^-100 to 2^110 (float32 products)") {
    Matrix<double> x = rng.uniform_tensor<double, 2>({height * width, c_in}) - 0.5;
    for (std::size_t k = 0; k < x.shape(0); ++k) x(k, k % c_in) *= std::ldexp(1.0, int(k % 7) * 35 - 100);
    const ExactScales exact = exact_scales(layer, x);
    const FiniteAlphaBound b = finite_alpha_bound(layer, x, height, width, c_in * 9, targets, 8.0, 1.0);
    long double head_scale = 0;
    std::size_t listed = 0;
    for (std::size_t h = 0; h < 10; ++h) {
      INFO("head " << h);
      head_scale += exact.value[h];
      if (h == 5 || h == 9) {
        CHECK(exact.abs[h] == 0);
        continue;
      }
      const double abs = b.heads.at(listed++).abs_value_scale;
      CHECK(abs >= exact.abs[h]);
      CHECK(abs <= exact.abs[h] * (1 + 4 * (c_in + 3) * u));
    }
    CHECK(listed == b.heads.size());
    CHECK(b.head_scale >= head_scale);
    CHECK(b.head_scale <= head_scale + 4 * (c_in + 3) * u * b.abs_scale);
  }
  SECTION("tokens beyond float32, and subnormal in float32: float64 products, still bounds") {
    Matrix<double> x = rng.uniform_tensor<double, 2>({height * width, c_in}) - 0.5;
    x(4, 1) = 1e300;
    x(3, 0) = 1e-44;
    const ExactScales exact = exact_scales(layer, x);
    const FiniteAlphaBound b = finite_alpha_bound(layer, x, height, width, c_in * 9, targets, 8.0, 1.0);
    CHECK(std::isfinite(b.head_scale));
    CHECK(b.heads.at(0).abs_value_scale >= exact.abs[0]);
    CHECK(b.heads.at(0).abs_value_scale == Approx(double(exact.abs[0])).epsilon(1e-13));
  }
}

TEST_CASE("the bound's scales stay upper bounds where float32 cannot hold the inputs", "[finite_alpha]") {
  // The exact scales and the bound of a one-head 1x1 construction of w on the 3 x 3 tokens x.
  const auto scales_of = [](const Kernel<double>& w, const Matrix<double>& x) {
    Theorem1Options options;
    options.heads = 1, options.head_dim = 2, options.alpha = 8;
    const MhsaLayer<double> layer = theorem1_layer<double>(w, std::nullopt, options);
    const std::vector<std::optional<std::array<int, 2>>> targets{std::array<int, 2>{0, 0}};
    return std::pair{exact_scales(layer, x), finite_alpha_bound(layer, x, 3, 3, w.shape(1), targets, 8.0, 1.0)};
  };
  SECTION("tokens that are subnormal in float32 (an error of 2^-150 absolute, not u relative)") {
    Kernel<double> w = xt::zeros<double>({1, 1, 1, 1});
    w(0, 0, 0, 0) = 1e30;
    Matrix<double> x = xt::zeros<double>({9, 1});
    x.fill(1.49 * std::ldexp(1.0, -149));
    const auto [exact, b] = scales_of(w, x);
    CHECK(b.head_scale >= exact.value[0]);
    CHECK(b.abs_scale >= exact.abs[0]);
  }
  SECTION("a token channel beyond float32 that no weight reads (inf * 0 = NaN)") {
    Kernel<double> w = xt::zeros<double>({1, 2, 1, 1});
    w(0, 1, 0, 0) = 1.0;  // channel 0 unused
    Matrix<double> x = xt::ones<double>({9, 2});
    x(0, 0) = 1e39, x(0, 1) = 1e30;
    const auto [exact, b] = scales_of(w, x);
    CHECK(b.abs_scale >= exact.abs[0]);
    CHECK(b.head_scale >= exact.value[0]);
  }
  SECTION("products that overflow float32 with both signs (inf - inf = NaN)") {
    Kernel<double> w = xt::zeros<double>({1, 2, 1, 1});
    w(0, 0, 0, 0) = 1e20, w(0, 1, 0, 0) = -1e20;
    Matrix<double> x = xt::ones<double>({9, 2});
    x *= 1e20;
    x(4, 1) = 0.5e20;
    const auto [exact, b] = scales_of(w, x);
    CHECK(b.head_scale >= exact.value[0]);
    CHECK(b.head_scale <= exact.value[0] * (1 + 1e-12));
  }
}

namespace {
// The round-off allowance and alpha_min as they were computed before the
// displacement loop was confined to the target's neighbourhood and alpha_min
// learnt to decide from the leak term alone (issue 27.1): every displacement
// of every head, every alpha in full.
double full_roundoff(const FiniteAlphaBound& b, double at_alpha) {
  const double u = b.unit_roundoff;
  const double sums = 2 * u * (b.longest_sum - b.keys + b.effective_keys(at_alpha)) * b.abs_scale;  // tested below
  if (b.exact_scores(at_alpha)) return sums;
  const int d_p = encoding_dim(b.encoding);
  const double gamma = (d_p + 2) * u, eps = b.leak_bound(at_alpha);
  std::vector<double> r(std::size_t(d_p), 0.0);
  const auto magnitude = [&](const FiniteAlphaBound::Head& h, int d1, int d2) {
    relative_encoding(b.encoding, d1, d2, r.data());
    double m = 0;
    for (int p = 0; p < d_p; ++p) m += std::abs(h.a[std::size_t(p)] * at_alpha) * std::abs(r[std::size_t(p)]);
    return m;
  };
  double scores = 0;
  for (const FiniteAlphaBound::Head& h : b.heads) {
    const double m_target = magnitude(h, h.target[0], h.target[1]);
    double w = 0;
    for (int d1 = -(b.span[0] - 1); d1 <= b.span[0] - 1; ++d1)
      for (int d2 = -(b.span[1] - 1); d2 <= b.span[1] - 1; ++d2) {
        const double dist2 = double(d1 - h.target[0]) * (d1 - h.target[0]) + double(d2 - h.target[1]) * (d2 - h.target[1]);
        const double exponent = -at_alpha * b.lambda_min * dist2;
        if (dist2 == 0 || exponent < -745) continue;
        w += std::exp(exponent) * (magnitude(h, d1, d2) + m_target + 1);
      }
    scores += 2 * h.abs_value_scale * gamma * ((1 + eps) * w + eps * (m_target + 1));
  }
  return sums + scores;
}

double full_bound(const FiniteAlphaBound& b, double at_alpha) {
  return 2 * b.leak_bound(at_alpha) * b.head_scale + full_roundoff(b, at_alpha);
}

double full_alpha_min(const FiniteAlphaBound& bound, double tolerance) {
  const double step = std::pow(2.0, 0.25);
  double previous = 0;
  for (double alpha = 1.0 / 64; alpha <= 4096 * (1 + 1e-12); alpha *= step) {
    if (full_bound(bound, alpha) <= tolerance) {
      if (previous == 0) return alpha;
      double lo = previous, hi = alpha;
      while (hi - lo > 1e-9 * hi) {
        const double mid = (lo + hi) / 2;
        (full_bound(bound, mid) <= tolerance ? hi : lo) = mid;
      }
      return hi;
    }
    previous = alpha;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Theorem 1 bounds of random layers: every encoding, both dtypes, kernels 1 to 5, images to 24.
template <class T> std::vector<FiniteAlphaBound> sample_bounds(std::uint64_t seed) {
  Random rng(seed);
  std::vector<FiniteAlphaBound> out;
  const std::array<std::array<int, 2>, 4> kernels{{{3, 3}, {1, 1}, {2, 5}, {5, 4}}};
  const std::array<std::array<std::size_t, 2>, 4> images{{{9, 11}, {5, 3}, {24, 17}, {12, 20}}};
  for (std::size_t k = 0; k < kernels.size(); ++k)
    for (const Encoding encoding : {Encoding::quadratic, Encoding::quadratic_general}) {
      const auto kernel = kernels[k];
      const std::size_t height = images[k][0], width = images[k][1], c_in = 3, c_out = 2;
      const Kernel<T> w = rng.uniform_tensor<T, 4>({c_out, c_in, std::size_t(kernel[0]), std::size_t(kernel[1])}) - T(0.5);
      Theorem1Options options;
      options.heads = kernel[0] * kernel[1] + 1, options.head_dim = 2, options.alpha = 8;
      options.dilation = {int(k % 2) + 1, 1};
      options.encoding = encoding;
      if (encoding == Encoding::quadratic_general) options.precision = random_precisions(seed + k, options.heads);
      const MhsaLayer<T> layer = theorem1_layer<T>(w, std::nullopt, options);
      std::vector<std::optional<std::array<int, 2>>> targets(std::size_t(options.heads));
      for (int h = 0; h < kernel[0] * kernel[1]; ++h)
        targets[std::size_t(h)] = target_shift(h / kernel[1], h % kernel[1], kernel, options.dilation);
      const Matrix<T> x = rng.uniform_tensor<T, 2>({height * width, c_in}) * T(4) - T(2);
      const double lambda_min = encoding == Encoding::quadratic ? 1.0 : [&] {
        double l = std::numeric_limits<double>::infinity();
        for (int h = 0; h < kernel[0] * kernel[1]; ++h) l = std::min(l, options.precision[std::size_t(h)].smallest_eigenvalue());
        return l;
      }();
      out.push_back(finite_alpha_bound(layer, x, height, width, c_in * std::size_t(kernel[0] * kernel[1]), targets,
                                       options.alpha, lambda_min));
    }
  return out;
}
}  // namespace

TEST_CASE("the round-off allowance and alpha_min are bit for bit those of the full computation", "[finite_alpha]") {
  std::vector<FiniteAlphaBound> bounds = sample_bounds<double>(41);
  for (const FiniteAlphaBound& b : sample_bounds<float>(43)) bounds.push_back(b);
  // A wide image with a target near its edge, a small lambda_min: the neighbourhood clipped on one side.
  FiniteAlphaBound wide = bounds.front();
  wide.span = {200, 7};
  wide.lambda_min = 0.03;
  wide.heads.front().target = {198, -6};
  bounds.push_back(wide);
  std::size_t compared = 0, differ_from_leak_alone = 0;
  for (std::size_t n = 0; n < bounds.size(); ++n) {
    const FiniteAlphaBound& b = bounds[n];
    INFO("bound " << n << " (" << to_string(b.encoding) << ", u = " << b.unit_roundoff << ")");
    REQUIRE(!b.heads.empty());
    // The alphas alpha_min tries, and integer ones (exact scores for the quadratic encoding).
    std::vector<double> alphas;
    for (double a = 1.0 / 64; a <= 4096; a *= std::pow(2.0, 0.25)) alphas.push_back(a);
    for (double a : {1.0, 7.0, 30.0, 60.0, 0.3, 2.5e-3, 1e5}) alphas.push_back(a);
    for (const double a : alphas) {
      INFO("alpha = " << a);
      CHECK(same_bits(b.roundoff(a), full_roundoff(b, a)));
      CHECK(same_bits(b(a), full_bound(b, a)));
      ++compared;
    }
    // Tolerances from the leak-dominated range down to below the round-off floor.
    for (double tolerance = 10; tolerance > 1e-19; tolerance /= 7.3) {
      INFO("tolerance = " << tolerance);
      const double fast = alpha_min(b, tolerance), full = full_alpha_min(b, tolerance);
      CHECK(same_bits(fast, full));
      if (std::isfinite(full) && full_roundoff(b, full) > 0.01 * tolerance) ++differ_from_leak_alone;
    }
  }
  CHECK(compared > 1000);
  CHECK(differ_from_leak_alone > 10);  // cases where the round-off term decides alpha_min, not the leak alone
}

namespace {
// n_eff of finite_alpha.hpp's (a) from its definition: each box |m|_inf <= R - 1, its
// keys counted and the weights outside it summed over the lattice directly (long double).
double plain_effective_keys(double a, double u, double keys) {
  double best = keys;
  for (int r = 1; 2.0 * (2 * r - 1) * (2 * r - 1) + 4 < keys; ++r) {
    long double tail = 0;
    for (int m1 = -80; m1 <= 80; ++m1)
      for (int m2 = -80; m2 <= 80; ++m2)
        if (std::max(std::abs(m1), std::abs(m2)) >= r) tail += std::exp(-(long double)a * (m1 * m1 + m2 * m2));
    best = std::min(best, double(2.0L * (2 * r - 1) * (2 * r - 1) + 4 + tail * (1 / (long double)u + keys)));
  }
  return best;
}
}  // namespace

TEST_CASE("the keys' sums count the keys near the target, never more than every key", "[finite_alpha]") {
  for (const double u : {std::numeric_limits<float>::epsilon() / 2.0, std::numeric_limits<double>::epsilon() / 2}) {
    for (const double keys : {9.0, 100.0, 1024.0, 16384.0}) {
      FiniteAlphaBound b;
      b.unit_roundoff = u, b.keys = keys, b.lambda_min = 0.5;
      for (double alpha = 1.0 / 16; alpha <= 4096; alpha *= 1.7) {
        INFO("u = " << u << ", keys = " << keys << ", alpha = " << alpha);
        b.concentrated = false;
        CHECK(b.effective_keys(alpha) == keys);  // a head that attends anywhere: every key
        b.concentrated = true;
        const double fast = b.effective_keys(alpha), plain = plain_effective_keys(alpha * b.lambda_min, u, keys);
        CHECK(fast <= keys);
        CHECK(fast >= plain * (1 - 1e-12));  // t's closed form bounds the tail from above
        if (alpha * b.lambda_min >= 1) CHECK(fast <= plain * (1 + 1e-6));
      }
    }
  }
  // The box of 9 keys at alpha = 12 in float32 (tail e^{-48}): 2 * 9 + 4 terms for 100 keys.
  FiniteAlphaBound b;
  b.unit_roundoff = std::numeric_limits<float>::epsilon() / 2, b.keys = 100, b.concentrated = true;
  CHECK(b.effective_keys(12) == Approx(22).epsilon(1e-9));
  CHECK(b.effective_keys(0.1) == 100);
}
