#include "construction/finite_alpha.hpp"

#include "mhsa/blas.hpp"
#include "parallel/threads.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

namespace attnconv {

namespace {
// sum_{n>=1} e^{-a n^2} for a >= 1: the terms fall at least e^{-2n-1} times
// each, so at most 28 are added before they stop mattering.
double gaussian_tail(double a) {
  double s = 0;
  for (double n = 1;; ++n) {
    const double term = std::exp(-a * n * n);
    s += term;
    if (term <= s * 1e-18) return s;  // also when the term underflows to 0
  }
}

// Upper bounds on the scales of the bound, per head (blocks of D_out columns):
//   value[h] >= max_k |X_k M_h|_inf,  abs[h] >= max_k (|X_k| B_h)_inf,
// M_h = W_val^h W_out^h, B_h = |W_val^h| |W_out^h| (side by side in m, b; computed in
// float64 over D_h terms, so within gamma_{D_h} B of the exact ones), from products
// in float32 (twice the rate of float64, half the bytes) or, when float32 cannot
// hold an input, in float64, with their error bounded (docs/design.md, "Finite
// alpha"; our derivation). With u, eta = the unit round-off and half the smallest
// subnormal of the product's dtype, k = D_in:
//   abs: the inputs rounded up, |x| <= x^, B <= B^ (exact in float64); a sum of k >= 0
//        products is at least (1 - u)^k times the exact one, less k eta for underflow, so
//        (|X_k| B)_ij <= (fl(X^ B^)_ij + 2 k eta) (1 + 2 (k + 1) u) (1 + 2 (D_h + 1) u64);
//   value: rounded to nearest (no subnormal input: then each errs by u relative),
//        |X M - fl(X~ M~)| <= (2 u + u^2 + gamma_k (1 + u)^2) |X| |M| + 2 k eta, and
//        |M| <= B, so |X M|_ij <= |fl(X~ M~)|_ij + (2 (k + 3) u + 2 (D_h + 1) u64) abs[h] + 2 k eta.
// The bounds exceed the exact maxima by at most about 3 (k + 2) u relative
// (float32, k = D_in = 64: 1.2e-5). float32 is used when every input is 0 or a
// normal float32 number and no product overflows (the maxima propagate NaN:
// mhsa/blas.hpp); else float64.
struct Scales {
  std::vector<double> value, abs;
};

float rounded_up(double v) {  // v >= 0
  const float f = float(v);
  return double(f) < v ? std::nextafter(f, std::numeric_limits<float>::infinity()) : f;
}

// The products' maxima (float32 or float64) made bounds as above; false when one is not finite.
template <class F>
bool bounded(const std::vector<F>& value_max, const std::vector<F>& abs_max, const xt::xtensor<double, 2>& b,
             std::size_t block_cols, double k, double d_h, Scales& out) {
  const double u = std::numeric_limits<F>::epsilon() / 2, u64 = std::numeric_limits<double>::epsilon() / 2;
  const double eta = double(std::numeric_limits<F>::denorm_min()) / 2;
  const double rounding = 1 + 8 * u64;  // the float64 arithmetic of the two lines below
  const double margin = (1 + 2 * (k + 1) * u) * (1 + 2 * (d_h + 1) * u64) * rounding;
  out = {std::vector<double>(value_max.size()), std::vector<double>(abs_max.size())};
  bool finite = true;
  for (std::size_t h = 0; h < abs_max.size(); ++h) {
    const std::size_t first = h * block_cols, last = std::min(b.shape(1), (h + 1) * block_cols);
    bool silent = true;  // a silent head: exactly 0
    for (std::size_t i = 0; i < b.shape(0) && silent; ++i)
      silent = std::all_of(b.data() + i * b.shape(1) + first, b.data() + i * b.shape(1) + last,
                           [](double v) { return v == 0; });
    if (silent) continue;
    out.abs[h] = (double(abs_max[h]) + 2 * k * eta) * margin;
    out.value[h] = (double(value_max[h]) + (2 * (k + 3) * u + 2 * (d_h + 1) * u64) * out.abs[h] + 2 * k * eta) * rounding;
    finite = finite && std::isfinite(out.abs[h]) && std::isfinite(out.value[h]);
  }
  return finite;
}

template <class T>
Scales scales(const Matrix<T>& x, const xt::xtensor<double, 2>& m, const xt::xtensor<double, 2>& b,
              std::size_t block_cols, std::size_t d_h) {
  const double k = double(x.shape(1));
  const auto to_float = [](const auto& a, bool up) {  // in fixed chunks of rows on the engine threads
    xt::xtensor<float, 2> out(a.shape());
    const std::size_t cols = a.shape(1), rows = 1024;
    parallel_for((a.shape(0) + rows - 1) / rows, [&](std::size_t chunk, std::size_t) {
      const std::size_t begin = chunk * rows * cols, end = std::min(a.size(), begin + rows * cols);
      std::transform(a.data() + begin, a.data() + end, out.data() + begin,
                     [up](auto v) { return up ? rounded_up(std::abs(double(v))) : float(v); });
    });
    return out;
  };
  // Every input 0 or a normal float32 number: none subnormal (it would err by eta
  // absolute, not u relative), none beyond FLT_MAX (inf * 0 = NaN).
  const auto fits = [](const auto& a) {
    return std::all_of(a.begin(), a.end(), [](auto v) {
      const double magnitude = std::abs(double(v));
      return magnitude == 0 || (magnitude >= double(std::numeric_limits<float>::min()) &&
                                magnitude <= double(std::numeric_limits<float>::max()));
    });
  };
  Scales out;
  if (fits(x) && fits(m) && fits(b) &&
      bounded(max_abs_of_product_blocks(to_float(x, false), to_float(m, false), block_cols),
              max_abs_of_product_blocks(to_float(x, true), to_float(b, true), block_cols), b, block_cols, k,
              double(d_h), out))
    return out;
  const xt::xtensor<double, 2> xd = xt::cast<double>(x), x_abs = xt::abs(xd);
  bounded(max_abs_of_product_blocks(xd, m, block_cols), max_abs_of_product_blocks(x_abs, b, block_cols), b,
          block_cols, k, double(d_h), out);  // not finite: the scales are inf or NaN, and so is the bound
  return out;
}

}  // namespace

namespace {
// m = [I, 0] (rows <= cols) or [I; 0] (rows >= cols): each entry exactly 1 on the diagonal, 0 elsewhere.
template <class T> bool padded_identity(const Matrix<T>& m) {
  const std::size_t cols = m.shape(1);
  for (std::size_t i = 0; i < m.shape(0); ++i) {
    const T* row = m.data() + i * cols;
    for (std::size_t j = 0; j < cols; ++j)
      if (row[j] != (i == j ? T(1) : T(0))) return false;
  }
  return true;
}

// The top-left rows x cols of m in float64, or their magnitudes.
template <class T> xt::xtensor<double, 2> corner(const Matrix<T>& m, std::size_t rows, std::size_t cols, bool absolute) {
  xt::xtensor<double, 2> out({rows, cols});
  for (std::size_t i = 0; i < rows; ++i) {
    const T* in = m.data() + i * m.shape(1);
    double* row = out.data() + i * cols;
    for (std::size_t j = 0; j < cols; ++j) row[j] = absolute ? std::abs(double(in[j])) : double(in[j]);
  }
  return out;
}
}  // namespace

template <class T>
xt::xtensor<double, 2> head_weight_product(const Matrix<T>& w_val, const Matrix<T>& w_out_block, bool absolute) {
  const std::size_t d_in = w_val.shape(0), d_h = w_val.shape(1), d_out = w_out_block.shape(1);
  const auto magnitude = [absolute](const auto& a) -> xt::xtensor<double, 2> {
    return absolute ? xt::xtensor<double, 2>(xt::abs(xt::cast<double>(a))) : xt::xtensor<double, 2>(xt::cast<double>(a));
  };
  if (d_h >= d_out && padded_identity(w_out_block)) return corner(w_val, d_in, d_out, absolute);
  if (d_h >= d_in && padded_identity(w_val)) return corner(w_out_block, d_in, d_out, absolute);
  return xt::linalg::dot(magnitude(w_val), magnitude(w_out_block));
}

double attention_leak(double alpha) {
  // s = sum_{n>=1} e^{-alpha n^2} = (theta(alpha) - 1) / 2 with theta(alpha) = sum_{n in Z} e^{-alpha n^2}.
  // For alpha < 1 the direct sum needs ~sqrt(40 / alpha) terms; the Jacobi
  // theta transformation (Poisson summation) theta(alpha) = sqrt(pi / alpha)
  // theta(pi^2 / alpha) converges in a few: pi^2 / alpha > pi^2. (1 - 2s cancels
  // nothing there: theta(alpha) >= 1.77 for alpha <= 1.)
  const double pi = 3.14159265358979323846;
  const double s = alpha >= 1 ? gaussian_tail(alpha)
                              : (std::sqrt(pi / alpha) * (1 + 2 * gaussian_tail(pi * pi / alpha)) - 1) / 2;
  return 4 * s * (1 + s);
}

bool FiniteAlphaBound::exact_scores(double at_alpha) const {
  std::vector<double> r(std::size_t(encoding_dim(encoding)), 0.0);
  relative_encoding(encoding, span[0] - 1, span[1] - 1, r.data());  // |r_p| is largest at a corner
  const double limit = std::ldexp(1.0, digits);
  for (const Head& h : heads) {
    double largest = 0;
    for (std::size_t p = 0; p < r.size(); ++p) {
      const double coefficient = h.a[p] * at_alpha;
      if (coefficient != std::round(coefficient) || std::abs(coefficient) >= limit) return false;
      largest += std::abs(coefficient) * std::abs(r[p]);
    }
    if (largest >= limit) return false;
  }
  return true;
}

double FiniteAlphaBound::effective_keys(double at_alpha) const {
  // n_eff of (a), finite_alpha.hpp: the smallest count over the boxes of half-side R - 1.
  const double a = at_alpha * lambda_min;
  double best = keys;
  if (!concentrated || !(a > 0) || !(unit_roundoff > 0)) return best;
  double s_r = 0;  // sum_{0 < n < R} e^{-a n^2}
  for (double r = 1;; ++r) {
    const double big = (2 * r - 1) * (2 * r - 1);
    if (!(2 * big + 4 < best)) return best;  // a larger box only counts more
    const double t = std::exp(-a * r * r) / -std::expm1(-a * (2 * r + 1));  // >= sum_{n>=R} e^{-a n^2}
    const double tail = 4 * t * (1 + 2 * s_r + t);
    best = std::min(best, 2 * big + 4 + tail * (1 / unit_roundoff + keys));
    s_r += std::exp(-a * r * r);
  }
}

double FiniteAlphaBound::roundoff(double at_alpha) const {
  const double u = unit_roundoff;
  const double sums = 2 * u * (longest_sum - keys + effective_keys(at_alpha)) * abs_scale;  // (a)
  if (exact_scores(at_alpha)) return sums;
  // (b): see finite_alpha.hpp.
  const int d_p = encoding_dim(encoding);
  const double gamma = (d_p + 2) * u, eps = leak_bound(at_alpha);
  std::vector<double> r(std::size_t(d_p), 0.0);
  const auto magnitude = [&](const Head& h, int d1, int d2) {  // M(delta)
    relative_encoding(encoding, d1, d2, r.data());
    double m = 0;
    for (int p = 0; p < d_p; ++p) m += std::abs(h.a[std::size_t(p)] * at_alpha) * std::abs(r[std::size_t(p)]);
    return m;
  };
  // Only the displacements within `reach` of the target (in either coordinate) can
  // have an exponent >= -745: beyond it alpha lambda_min |delta - Delta|^2 >= 746,
  // which stays above 745 after the two roundings of the exponent's product. The
  // others are skipped below anyway, so visiting the box around the target, in the
  // same order, adds the same terms in the same order: the same bits, in O(reach^2)
  // rather than O(H_p W_p) per head (alpha_min evaluates this at ~50 alphas).
  const double scale = at_alpha * lambda_min;
  const double reach_real = scale > 0 ? std::ceil(std::sqrt(746 / scale)) : std::numeric_limits<double>::infinity();
  const auto window = [&](int target, int extent) {  // [first, last] of the displacements along one axis
    const int lowest = -(extent - 1), highest = extent - 1;
    if (!(reach_real < double(2 * extent))) return std::pair{lowest, highest};  // also NaN: every displacement
    const int reach = int(reach_real);
    return std::pair{std::max(lowest, target - reach), std::min(highest, target + reach)};
  };
  double scores = 0;
  for (const Head& h : heads) {
    const double m_target = magnitude(h, h.target[0], h.target[1]);
    double w = 0;  // sum_{k != t} e^{-alpha lambda_min |delta - Delta|^2} e_k / gamma
    const auto [first1, last1] = window(h.target[0], span[0]);
    const auto [first2, last2] = window(h.target[1], span[1]);
    for (int d1 = first1; d1 <= last1; ++d1)
      for (int d2 = first2; d2 <= last2; ++d2) {
        const double dist2 = double(d1 - h.target[0]) * (d1 - h.target[0]) + double(d2 - h.target[1]) * (d2 - h.target[1]);
        const double exponent = -at_alpha * lambda_min * dist2;
        if (dist2 == 0 || exponent < -745) continue;  // the target, or a weight that underflows to 0
        w += std::exp(exponent) * (magnitude(h, d1, d2) + m_target + 1);
      }
    scores += 2 * h.abs_value_scale * gamma * ((1 + eps) * w + eps * (m_target + 1));
  }
  return sums + scores;
}

template <class T>
FiniteAlphaBound finite_alpha_bound(const MhsaLayer<T>& layer, const Matrix<T>& tokens, std::size_t height,
                                    std::size_t width, std::size_t conv_terms,
                                    const std::vector<std::optional<std::array<int, 2>>>& targets, double alpha,
                                    double lambda_min) {
  FiniteAlphaBound b;
  b.alpha = alpha;
  b.lambda_min = lambda_min;
  b.unit_roundoff = std::numeric_limits<T>::epsilon() / 2;
  b.digits = std::numeric_limits<T>::digits;
  b.encoding = layer.encoding;
  b.span = {int(height), int(width)};
  const std::size_t d_h = layer.head_dim();
  b.keys = double(height * width);
  // n_1 = C_in K1 K2 + N_h D_h + D_in: the terms of the sums besides those over the keys.
  const std::size_t n_1 = conv_terms + layer.heads.size() * d_h + layer.in_dim();
  b.longest_sum = b.keys + double(n_1 + 1);
  // The separable engine's sums over the keys are nested 1-D sums (rows, then columns): at R = 1 they
  // need up to 8 terms more than n_eff counts, which the factor 2 of (a) over n_1 covers once
  // n_1 >= 11 (finite_alpha.hpp); below that every key is counted.
  b.concentrated = n_1 >= 11;
  b.abs_scale = double(xt::amax(xt::abs(xt::cast<double>(layer.b_out)))());
  // Every head's W_val^h W_out^h and |W_val^h| |W_out^h| side by side (D_in x N_h D_out),
  // so that each chunk of tokens is multiplied once for all heads (mhsa/blas.hpp).
  const std::size_t heads = layer.heads.size(), d_in = layer.in_dim(), d_out = layer.out_dim();
  xt::xtensor<double, 2> m_all = xt::zeros<double>({d_in, heads * d_out}), m_abs_all = m_all;
  const auto put = [&](xt::xtensor<double, 2>& all, const xt::xtensor<double, 2>& block, std::size_t h) {
    for (std::size_t i = 0; i < d_in; ++i)  // columns h D_out ... (h+1) D_out
      std::copy_n(block.data() + i * d_out, d_out, all.data() + i * heads * d_out + h * d_out);
  };
  for (std::size_t h = 0; h < heads; ++h) {
    const Matrix<T> w_out = xt::view(layer.w_out, xt::range(h * d_h, (h + 1) * d_h), xt::all());
    put(m_all, head_weight_product(layer.heads[h].w_val, w_out, false), h);
    put(m_abs_all, head_weight_product(layer.heads[h].w_val, w_out, true), h);
  }
  const Scales scale = scales(tokens, m_all, m_abs_all, d_out, d_h);
  const std::vector<double>& value_scale = scale.value;
  const std::vector<double>& abs_value_scale = scale.abs;
  for (std::size_t h = 0; h < heads; ++h) {
    b.head_scale += value_scale[h];
    b.abs_scale += abs_value_scale[h];
    const bool targeted = h < targets.size() && targets[h];
    if (!targeted && !(abs_value_scale[h] == 0)) b.concentrated = false;  // a head attending anywhere
    if (targeted && abs_value_scale[h] > 0) {
      FiniteAlphaBound::Head bh;
      bh.target = *targets[h];
      bh.abs_value_scale = abs_value_scale[h];
      const AttentionHead<T>& head = layer.heads[h];
      const xt::xtensor<double, 1> a = xt::linalg::dot(xt::cast<double>(head.v), xt::cast<double>(head.w_key_hat));
      for (double value : a) bh.a.push_back(value / alpha);
      b.heads.push_back(std::move(bh));
    }
  }
  return b;
}

double alpha_min(const FiniteAlphaBound& bound, double tolerance) {
  // bound(alpha) <= tolerance, deciding from the leak term alone when it already
  // exceeds the tolerance: bound(alpha) = leak term + roundoff(alpha) with
  // roundoff >= 0 (or NaN), and adding a non-negative number never rounds below
  // the sum's first term, so the answer is the same and roundoff(alpha), the
  // costly part, is evaluated only near alpha_min.
  const auto meets = [&](double alpha) {
    const double leak_term = 2 * bound.leak_bound(alpha) * bound.head_scale;  // as in FiniteAlphaBound::operator()
    if (!(leak_term <= tolerance)) return false;
    return leak_term + bound.roundoff(alpha) <= tolerance;
  };
  const double step = std::pow(2.0, 0.25);
  double previous = 0;
  for (double alpha = 1.0 / 64; alpha <= 4096 * (1 + 1e-12); alpha *= step) {
    if (meets(alpha)) {
      if (previous == 0) return alpha;  // already below at the smallest alpha tried
      double lo = previous, hi = alpha;  // bound(lo) > tolerance >= bound(hi)
      while (hi - lo > 1e-9 * hi) {
        const double mid = (lo + hi) / 2;
        (meets(mid) ? hi : lo) = mid;
      }
      return hi;
    }
    previous = alpha;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

template xt::xtensor<double, 2> head_weight_product(const Matrix<float>&, const Matrix<float>&, bool);
template xt::xtensor<double, 2> head_weight_product(const Matrix<double>&, const Matrix<double>&, bool);
template FiniteAlphaBound finite_alpha_bound(const MhsaLayer<float>&, const Matrix<float>&, std::size_t, std::size_t,
                                             std::size_t, const std::vector<std::optional<std::array<int, 2>>>&,
                                             double, double);
template FiniteAlphaBound finite_alpha_bound(const MhsaLayer<double>&, const Matrix<double>&, std::size_t,
                                             std::size_t, std::size_t,
                                             const std::vector<std::optional<std::array<int, 2>>>&, double, double);

}  // namespace attnconv
