#pragma once
// Gaussian attention heads (construction/gaussian_attention.hpp) as a trained
// layer runs them on an H x W grid of tokens, with no padding (epfml/attention-cnn's
// GaussianSelfAttention: the softmax runs over the keys of the image), for the
// trained-attention measurement (issue 23; docs/trained_attention.md). Per head h,
// grid query q, grid key k, δ = k − q (row, column):
//   P_h(q, k) = softmax_k ( (X_q W_qry^h)(X_k W_key^h)ᵀ − (δ − Δ_h)ᵀ A_h (δ − Δ_h) ),
//   y_q = Σ_h (W_val^h W_out^h)ᵀ Σ_k P_h(q, k) x_k + b_out   (Cordonnier et al., Eq. 8 and Section 4).
// epfml's module is the case W_val^h = I (its `value` Linear maps the heads'
// concatenated averages), W_out = value.weight ᵀ, b_out = value.bias,
// Δ_h = attention_centers[h] and A_h = ½ S_h S_hᵀ, S_h = attention_spreads[h]
// (½ s_h² I for the isotropic variant): its scores are
// −½ (δ − Δ_h)ᵀ S_h S_hᵀ (δ − Δ_h) up to a constant per head.
#include "construction/gaussian_attention.hpp"
#include "construction/trained_attention.hpp"

namespace attnconv {

// The layer on tokens x (N, H·W, D_in), row-major over the grid: y (N, H·W, D_out)
// and P (N, N_h, H·W, H·W). Sums in double. Throws std::invalid_argument on shapes
// that disagree.
template <class T>
AttentionForward<T> gaussian_grid_forward(const GaussianAttention<T>& layer, const xt::xtensor<T, 3>& x, int height,
                                          int width);

// M_h = (W_val^h W_out^h)ᵀ (N_h, D_out, D_in): head h's map of the tokens it averages.
template <class T> xt::xtensor<double, 3> gaussian_head_maps(const GaussianAttention<T>& layer);

}  // namespace attnconv
