#pragma once
// How far the Theorem 1 construction is from its alpha -> infinity limit at a
// finite alpha (docs/design.md, "Finite alpha"; our derivation, not in the paper).
//
// Leak. For a query whose target key q + Delta exists, with a positional score
// -alpha (delta - Delta)^T A (delta - Delta) + const (A = I for the quadratic
// encodings, a per-head SPD precision for quadratic_general):
//   1 - P_{q,q+Delta} <= sum_{m in Z^2, m != 0} e^{-alpha m^T A m}
//                     <= sum_{m != 0} e^{-alpha lambda_min |m|^2}       (m^T A m >= lambda_min |m|^2)
//                      = (1 + 2s)^2 - 1 = 4 s (1 + s),  s = sum_{n>=1} e^{-alpha lambda_min n^2}.
// (The keys of the image are a subset of q + Z^2 and the target's own term
// is 1 in the denominator.) With lambda_min = 1 this is eps(alpha) of docs/design.md.
//
// Output. MHSA_q - conv_q = sum_h sum_{k != t} P_qk (X_k - X_t) W_val^h W_out^h, so
//   |MHSA - conv|_inf <= sum_h eps * 2 max_k |X_k W_val^h W_out^h|_inf.
//
// Round-off allowance (first-order error analysis, gamma_n = n u, Higham 2002 §3.1;
// u = unit round-off of the dtype). Added to the bound above:
//   (a) sums: each output is a sum of at most n terms in either computation
//       (softmax denominator over the H_p W_p keys, the weighted sum of values,
//       X W_val, concat W_out, the convolution's C_in K1 K2 products, the
//       bias); each computation errs by at most n u sum|terms|, and sum|terms|
//       <= abs_scale = |b|_inf + sum_h max_k (|X_k| |W_val^h| |W_out^h|)_inf, so 2 n u abs_scale;
//       the two sums over the keys (denominator, weighted values) count as n_eff terms
//       each rather than H_p W_p when every head with a value path has a target
//       (`concentrated`; our derivation, docs/design.md "Finite alpha"): rounding to
//       nearest errs by at most min(u |A + B|, |A|, |B|) in an addition A + B (A and B
//       are representable), and by at most u |c + a b| or |a b| in a fused c + a b. Call a
//       key big when it lies in the box |delta - Delta|_inf <= R - 1, small otherwise; the
//       small keys' weights sum to at most tail_R = sum over m in Z^2 outside the box of
//       e^{-alpha lambda_min |m|^2} = 4 t (1 + 2 s_R + t), t = sum_{n>=R} e^{-alpha lambda_min n^2}
//       <= e^{-alpha lambda_min R^2} / (1 - e^{-alpha lambda_min (2R+1)}), s_R the sum for
//       0 < n < R. In any order of summation, the additions that join two parts holding big
//       keys, or add a big key's product, are at most 2 B_R (B_R = (2R - 1)^2 big keys) and
//       err by at most u sum|terms| each; every other addition either joins a part of small
//       keys only (error at most that part, and each small key is in one such part) or
//       lies inside one (at most u tail_R sum|terms| each, at most H_p W_p of them); the
//       products err by u |term| each. So a sum over the keys errs by at most
//       (2 B_R + 1 + tail_R (1/u + H_p W_p)) u sum|terms|, and with the exponential and the
//       division (3 u more) n_eff = min(H_p W_p, min_R 2 B_R + 4 + tail_R (1/u + H_p W_p)).
//       The separable engine sums rows, then columns: two nested 1-D sums, each with
//       2 (2R - 1) + 1 such terms, and two exponentials, divisions and a product, at most
//       20 u in all at R = 1 against the 12 of n_eff's two sums; the factor 2 over the
//       other sums' n_1 = C_in K1 K2 + N_h D_h + D_in terms covers the 8 more when n_1 >= 11
//       (for R >= 2, 2 B_R exceeds the nested count), so `concentrated` also needs n_1 >= 11.
//   (b) scores: the positional score s_k = a . r_delta (a = v W^_key) is a sum of
//       large terms that cancel (|a_p r_p| grows like alpha |delta|^2). Key k's
//       exponent s_k - max errs by e_k <= gamma (M(delta) + M(Delta) + 1),
//       gamma = (D_p + 2) u, M(delta) = sum_p |a_p| |r_p(delta)| (the dot product,
//       the subtraction of the row maximum, the exp). To first order a change e_k of
//       the exponents changes P_qk by P_qk (e_k - e_bar), e_bar = sum_j P_qj e_j (a
//       common shift cancels), so head h's output moves by
//         sum_{k != t} P_qk (e_k - e_bar)(V_k - V_t)
//         <= 2 max_k |V_k| ((1 + eps) W + eps e_t),  W = sum_{k != t} P_qk e_k,
//       with P_qk <= e^{-alpha lambda_min |delta - Delta|^2} for k != t and 1 - P_t <= eps;
//       max_k |V_k| <= max_k (|X_k| |W_val^h| |W_out^h|)_inf. This term is zero when
//       every score is computed exactly: every coefficient alpha a_p is an integer and
//       max_delta M(delta) < 2^digits of the dtype, so every product and partial
//       sum is an exactly representable integer (the quadratic encodings with an
//       integer alpha, e.g. 60; not quadratic_general, whose A is random).
// The allowance assumes W_qry = W_key = 0 and u = 0, as in the construction.
// The scales max_k |X_k W_val^h W_out^h|_inf and max_k (|X_k| |W_val^h| |W_out^h|)_inf
// are upper bounds from float32 products with their own error bound
// (finite_alpha.cpp, `scales`; docs/design.md, "Finite alpha").
#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "mhsa/mhsa_layer.hpp"

namespace attnconv {

// eps(alpha) = 4 s (1 + s), s = sum_{n>=1} e^{-alpha n^2}, to 1e-12 relative for
// every alpha > 0; never (1 + 2s)^2 - 1 (it cancels to 0).
double attention_leak(double alpha);

struct FiniteAlphaBound {
  double alpha = 0;            // the alpha of the layer the scales were measured on
  double lambda_min = 1;       // smallest eigenvalue of the positional precision (1: quadratic encodings)
  double head_scale = 0;       // sum_h max_k |X_k W_val^h W_out^h|_inf
  double abs_scale = 0;        // |b|_inf + sum_h max_k (|X_k| |W_val^h| |W_out^h|)_inf
  double longest_sum = 0;      // n of (a), counting the keys' sums as `keys` terms
  double keys = 0;             // H_p W_p, the keys of the softmax sums
  bool concentrated = false;   // every head with a value path has a target Delta
  double unit_roundoff = 0;    // u of the dtype
  int digits = 53;             // mantissa digits of the dtype
  struct Head {
    std::array<int, 2> target{0, 0};  // Delta
    std::vector<double> a;             // v W^_key per unit alpha
    double abs_value_scale = 0;        // max_k (|X_k| |W_val^h| |W_out^h|)_inf
  };
  std::vector<Head> heads;     // heads with a non-zero value path
  std::array<int, 2> span{1, 1};  // the image (H_p, W_p) the keys live in
  Encoding encoding = Encoding::quadratic;

  double leak(double at_alpha) const { return attention_leak(at_alpha * lambda_min); }
  // 1 - P_{q,q+Delta} is a probability: at most min(eps, 1) (eps > 1 below alpha ~ 1.6
  // and grows like pi / alpha, which would make (b) and the bound vacuous)
  double leak_bound(double at_alpha) const { return std::min(1.0, leak(at_alpha)); }
  double roundoff(double at_alpha) const;      // (a) + (b)
  double effective_keys(double at_alpha) const;  // n_eff of (a); `keys` unless `concentrated`
  bool exact_scores(double at_alpha) const;    // (b) is zero
  double operator()(double at_alpha) const { return 2 * leak_bound(at_alpha) * head_scale + roundoff(at_alpha); }
};

// W_val^h W_out^h of one head (D_in x D_out, in double), or |W_val^h| |W_out^h| when
// `absolute`. Where one factor is a zero-padded identity (the construction's
// factors when D_h >= min(D_in, D_out)), the other factor's leading block: the
// entries the product gives (x * 1 plus exact zeros), without its D_in D_h D_out
// multiply-adds.
template <class T>
xt::xtensor<double, 2> head_weight_product(const Matrix<T>& w_val, const Matrix<T>& w_out_block, bool absolute);

// Measures the scales of a layer built by the construction on the tokens of an
// H x W image (the padded one). `conv_terms` = C_in K1 K2 (the convolution's sum);
// `targets` = Delta of each head (empty: silent head), `lambda_min` as above.
template <class T>
FiniteAlphaBound finite_alpha_bound(const MhsaLayer<T>& layer, const Matrix<T>& tokens, std::size_t height,
                                    std::size_t width, std::size_t conv_terms,
                                    const std::vector<std::optional<std::array<int, 2>>>& targets,
                                    double alpha, double lambda_min);

// The smallest alpha with bound(alpha) <= max_abs_tolerance, or NaN when none
// up to 2^12 does (round-off alone exceeds it). The leak term decreases
// strictly with alpha and the round-off term grows slowly, so the bound first
// falls: a geometric grid finds the first alpha under the tolerance and
// bisection refines it to 1e-9 relative.
double alpha_min(const FiniteAlphaBound& bound, double max_abs_tolerance);

}  // namespace attnconv
