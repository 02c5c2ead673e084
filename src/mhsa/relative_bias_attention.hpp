#pragma once
// Self-attention with W_qry = W_key = 0 and a relative position bias per head
// (Shaw, Uszkoreit & Vaswani 2018; Chang, Xu, Xu & Tu, ACL 2021): on a sequence
// of L tokens,
//   y[c, i] = sum_j softmax_j(beta_h(j - i)) x[c, j],   h = c / (C / N_h),
// the values being the input (W_val = I) and the softmax over the L tokens
// that exist. A bias of -inf masks its offset (weight exactly 0).
#include <limits>

#include "tensor/tensor.hpp"

namespace attnconv {

// beta (N_h, 2L - 1): column delta + L - 1 holds beta_h(delta), delta = j - i in [-(L-1), L-1].
template <class T> using RelativeBias = Matrix<T>;

// From window logits w (N_h, 2k + 1), offset delta <-> w[delta + k]:
//   masked:  beta(delta) = w[delta + k] for |delta| <= k, -inf outside;
//   clipped: beta(delta) = w[clip(delta, -k, k) + k] (Shaw et al.'s clipped relative positions).
enum class BiasOutsideWindow { masked, clipped };
template <class T> RelativeBias<T> window_bias(const Matrix<T>& logits, std::size_t length, BiasOutsideWindow outside);

// x (C, L); beta (N_h, 2L - 1), N_h dividing C. Throws std::invalid_argument otherwise.
template <class T> Sequence<T> relative_bias_attention(const Sequence<T>& x, const RelativeBias<T>& beta);

// The attention weights of head h over the keys j of query i (length L).
template <class T> Vector<T> relative_bias_row(const RelativeBias<T>& beta, std::size_t h, std::size_t i);

}  // namespace attnconv
