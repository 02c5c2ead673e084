#pragma once
// Self-attention with W_qry = W_key = 0 and a relative position bias per head
// (Shaw, Uszkoreit & Vaswani 2018; Chang, Xu, Xu & Tu, ACL 2021): on a sequence
// of L tokens,
//   y[c, i] = sum_j softmax_j(beta_h(j - i)) x[c, j],   h = channel_head(c),
// the values being the input (W_val = I) and the softmax over the L tokens
// that exist. A bias of -inf masks its offset (weight exactly 0). The heads
// split the channels as fairseq's LightweightConv1dTBC (contiguous) or
// LightweightConv1d (interleaved) do (tensor/channel_heads.hpp).
#include <limits>

#include "tensor/channel_heads.hpp"
#include "tensor/tensor.hpp"

namespace attnconv {

// beta (N_h, 2L - 1): column delta + L - 1 holds beta_h(delta), delta = j - i in [-(L-1), L-1].
template <class T> using RelativeBias = Matrix<T>;

// From window logits w (N_h, K = 2k + 1) on the offsets [-P, K - 1 - P], P = padding_l
// (k: the centred window; K - 1: causal, the window ends at the query), offset delta <-> w[delta + P]:
//   masked:  beta(delta) = w[delta + P] inside the window, -inf outside;
//   clipped: beta(delta) = w[clip(delta, -P, K - 1 - P) + P] (Shaw et al.'s clipped relative positions).
enum class BiasOutsideWindow { masked, clipped };
template <class T>
RelativeBias<T> window_bias(const Matrix<T>& logits, std::size_t length, BiasOutsideWindow outside,
                            std::size_t padding_l);
template <class T> RelativeBias<T> window_bias(const Matrix<T>& logits, std::size_t length, BiasOutsideWindow outside);

// x (C, L); beta (N_h, 2L - 1), N_h dividing C. Throws std::invalid_argument otherwise.
template <class T> Sequence<T> relative_bias_attention(const Sequence<T>& x, const RelativeBias<T>& beta, HeadLayout layout);
// Contiguous heads.
template <class T> Sequence<T> relative_bias_attention(const Sequence<T>& x, const RelativeBias<T>& beta);

// The attention weights of head h over the keys j of query i (length L).
template <class T> Vector<T> relative_bias_row(const RelativeBias<T>& beta, std::size_t h, std::size_t i);

}  // namespace attnconv
