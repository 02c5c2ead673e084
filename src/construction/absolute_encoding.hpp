#pragma once
// Cordonnier, Loukas & Jaggi (ICLR 2020), Eq. 7, the absolute positional
// encoding A_qk = (X_q + P_q) W_qry W_key^T (X_k + P_k)^T, and a construction
// of ours (derived here, not stated in the paper; docs/design.md, "Absolute
// encoding") that expresses a K1 x K2 convolution with it.
//
// Four input channels are reserved for positions: P_p = (p1, p2, |p|^2, 1)
// there (p the pixel's row and column), the image's own channels zero there.
// W_qry W_key^T is zero outside that block and on it the 4 x 4 matrix
//   M = [[2 alpha, 0, 0, 0], [0, 2 alpha, 0, 0], [0, 0, 0, 0], [2 alpha Delta1, 2 alpha Delta2, -alpha, 0]]
// (rows: the query's (p1, p2, |p|^2, 1), columns: the key's), so
//   P_q M P_k^T = 2 alpha q.k + 2 alpha Delta.k - alpha |k|^2 = -alpha |k - q - Delta|^2 + alpha |q + Delta|^2:
// Theorem 1's Gaussian bump around q + Delta plus a term of q alone, which the
// softmax over k cancels. M has rank 3 (its third row is zero), so D_k = 3
// suffices: W_qry selects (p1, p2, 1) and W_key holds the rows 0, 1, 3 of M.
// The values read only the image channels, as in Theorem 1.
#include <array>
#include <optional>
#include <vector>

#include "construction/finite_alpha.hpp"
#include "mhsa/mhsa_layer.hpp"

namespace attnconv {

// The 4 x 4 matrix M of a head with target shift Delta (row-major).
std::array<std::array<double, 4>, 4> absolute_block(double alpha, std::array<int, 2> target);

// Where the positions go: four channels appended to the image's (reserved, the
// construction) or added to the image's first four channels (the converse: no
// channel is free, so the content cross terms X_q M X_k^T, X_q M P_k^T and
// P_q M X_k^T stay in the scores).
enum class PositionChannels { reserved, added };

// The tokens (H*W) x D of an H x W image with P_p = (p1, p2, |p|^2, 1) put in:
// D = D_in + 4 for `reserved` (the last four channels), D = D_in >= 4 for `added`.
template <class T>
Matrix<T> with_positions(const Matrix<T>& tokens, std::size_t height, std::size_t width, PositionChannels where);

// The absolute-encoding layer from a Theorem 1 layer `relative` (theorem1_layer)
// and each head's target (none: a silent head): the same values, output and
// bias (W_val with four zero rows appended for `reserved`), u = v = 0,
// W^_key = 0, and per head W_qry, W_key (D x 3) with W_qry W_key^T = M on the
// position channels (the last four for `reserved`, the first four for `added`).
template <class T>
MhsaLayer<T> absolute_encoding_layer(const MhsaLayer<T>& relative,
                                     const std::vector<std::optional<std::array<int, 2>>>& targets, double alpha,
                                     PositionChannels where);

// The round-off of the absolute scores, added to the finite-alpha bound of the
// construction (finite_alpha.hpp, whose term (b) is for the relative scores).
// First-order, as there (Higham 2002, §3.1, gamma_n = n u):
//   head h's score s_qk = (x_q W_qry)(x_k W_key)^T errs by at most gamma_n S_qk,
//   n = 2 D + D_k, S_qk = (|x_q| |W_qry|)(|x_k| |W_key|)^T <= S_h =
//   sum_a max_q (|x_q| |W_qry|)_a max_k (|x_k| |W_key|)_a; subtracting the row
//   maximum adds u |s_k - s_max| <= 2 u S_h and the exp u, so every exponent errs
//   by at most E_h = 2 (gamma_n + u) S_h + u. A change e_k of the exponents moves
//   the output by sum_k P_qk (e_k - e_bar)(V_k - V_t) (the target t's term is 0),
//   at most 2 E_h 2 max_k |V_k| (1 - P_qt) <= 4 eps E_h max_k |V_k|:
//     scores = sum_h 4 eps(alpha) E_h max_k (|X_k| |W_val^h| |W_out^h|)_inf.
// S_h grows like alpha (H^2 + W^2): the scores are sums of terms of that size
// that cancel to the Gaussian bump, where the relative encoding's terms near
// the target are of size alpha |Delta|^2.
struct AbsoluteScoreRoundoff {
  double unit_roundoff = 0;
  std::vector<double> score_scale;      // S_h per head with a value path
  std::vector<double> abs_value_scale;  // max_k (|X_k| |W_val^h| |W_out^h|)_inf, same heads
  std::size_t terms = 0;                // n
  double operator()(double leak_bound) const;
  double largest_score_scale() const;
};

template <class T>
AbsoluteScoreRoundoff absolute_score_roundoff(const MhsaLayer<T>& layer, const Matrix<T>& tokens);

}  // namespace attnconv
