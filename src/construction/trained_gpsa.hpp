#pragma once
// A trained ConViT GPSA layer in PyTorch's layout (d'Ascoli et al., ICML 2021,
// Eq. 5 and Sec. 3; facebookresearch/convit, convit.py, class GPSA, whose names
// timm's ConViT keeps; read for this code and written anew here), run on the
// tokens it received, for the measurement of construction/trained_attention.hpp.
//
// Tokens are the H × W patches only (GPSA runs before the class token is
// joined), row-major: token t is patch (t / W, t % W). With d = D / N_h and
// head h the rows h·d … (h+1)·d − 1 of W_q, W_k (the two D × D blocks of
// qk.weight, (2D, D)) and of W_v (v.weight, (D, D)):
//   patch_h(q, k) = softmax_k ( (W_q^h x_q + b_q^h) · (W_k^h x_k + b_k^h) / √d )
//   pos_h(q, k)   = softmax_k ( w_h · r(q, k) + c_h )            (pos_proj: w (N_h, 3), c (N_h))
//   r(q, k)       = (δ_col, δ_row, δ_col² + δ_row²),  δ = key − query
//                   (ConViT's rel_indices order: [..., 0] the column offset, [..., 1] the row offset)
//   A_h(q, k)     = ((1 − σ(λ_h)) patch_h(q, k) + σ(λ_h) pos_h(q, k)) / Σ_k' (same)   (λ = gating_param)
//   y_q = W_o Σ_h [ Σ_k A_h(q, k) (W_v^h x_k + b_v^h) ] + b_o    (proj.weight (D, D), proj.bias)
// b_q, b_k, b_v exist when ConViT's qkv_bias is set (default False: zeros).
// ConViT builds rel_indices from √N patches: its grid is square.
// As the renormalised rows sum to 1, K_q(δ) = Σ_h A_h(q, q+δ) M_h with
// M_h = W_o^h W_v^h and the folded bias b = W_o b_v + b_o.
#include <cstddef>
#include <vector>

#include "construction/trained_attention.hpp"

namespace attnconv {

template <class T> struct TorchGpsa {
  std::size_t heads = 1;
  Matrix<T> w_qk;     // (2D, D): qk.weight, [W_q; W_k], PyTorch's (out, in)
  Vector<T> b_qk;     // (2D): qk.bias; zeros without qkv_bias
  Matrix<T> w_v;      // (D, D): v.weight
  Vector<T> b_v;      // (D): v.bias; zeros without qkv_bias
  Matrix<T> w_proj;   // (D, D): proj.weight
  Vector<T> b_proj;   // (D): proj.bias
  Matrix<T> w_pos;    // (N_h, 3): pos_proj.weight on (δ_col, δ_row, ‖δ‖²)
  Vector<T> b_pos;    // (N_h): pos_proj.bias
  Vector<T> gating;   // (N_h): gating_param λ_h
};

// The layer on tokens x (N, H·W, D) of an H × W grid: its output y (N, H·W, D)
// (double sums, stored in T) and A (N, N_h, H·W, H·W). Throws
// std::invalid_argument when the shapes disagree.
template <class T> AttentionForward<T> gpsa_torch_forward(const TorchGpsa<T>& layer, const xt::xtensor<T, 3>& x, int h, int w);

// M_h = W_o^h W_v^h (N_h, D, D) and b = W_o b_v + b_o.
template <class T> xt::xtensor<double, 3> head_maps(const TorchGpsa<T>& layer);
template <class T> Vector<double> folded_bias(const TorchGpsa<T>& layer);

// σ(λ_h) per head.
template <class T> std::vector<double> gate_sigmas(const TorchGpsa<T>& layer);

}  // namespace attnconv
