#pragma once
// The textbook multi-head self-attention layer of Cordonnier, Loukas & Jaggi
// (ICLR 2020), Eq. 8, one query and one key at a time, the ground truth every
// MHSA engine is checked against (docs/design.md, "Self-attention"). Per head,
// query pixel q, key pixel k, offset delta = k - q:
//   A_qk = (X_q W_qry)(X_k W_key)^T + (X_q W_qry).(W^_key r_delta) + u.(X_k W_key) + v.(W^_key r_delta)
//   P_q = softmax_k(A_qk) over every pixel of the image (the row maximum subtracted)
//   SA_h(X)_q = sum_k P_qk X_k W_val;   MHSA(X) = concat_h(SA_h(X)) W_out + b_out
// Plain loops in long double (its own round-off is negligible beside the
// engines'); r_delta is written out here again, not taken from the layer code.
#include <cstddef>

#include "mhsa/mhsa_layer.hpp"

namespace attnconv::reference {

using Real = long double;

// x: (H*W) x D_in tokens of an H x W image (token index i*W + j). Returns (H*W) x D_out.
template <class T>
xt::xtensor<Real, 2> mhsa(const MhsaLayer<T>& layer, const Matrix<T>& x, std::size_t height, std::size_t width);

}  // namespace attnconv::reference
