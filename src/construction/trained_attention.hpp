#pragma once
// How convolutional a trained multi-head self-attention layer is on the
// tokens it received (issue 23, item 3; docs/design.md, "Nearest
// convolution"). The layer is PyTorch's: nn.MultiheadAttention (in_proj_weight,
// in_proj_bias, out_proj.weight, out_proj.bias) as torchvision's
// VisionTransformer calls it, or timm's Attention (qkv, proj), which compute
// the same thing: with d = D / N_h and head h the rows h·d … (h+1)·d − 1 of each
// of W_q, W_k, W_v (the three blocks of the (3D, D) weight),
//   P_h(q, k) = softmax_k ( (W_q^h x_q + b_q^h) · (W_k^h x_k + b_k^h) / √d ),
//   y_q = Σ_h W_o^h Σ_k P_h(q, k) (W_v^h x_k + b_v^h) + b_o,
// W_o^h the columns h·d … (h+1)·d − 1 of out_proj.weight (D_out, D).
//
// The tokens are `extra` tokens (ViT's class token) followed by an H × W grid
// in row-major order. Since Σ_k P_h(q, k) = 1, for a grid query q
//   y_q = Σ_{k ∈ grid} K_q(k − q) x_k + Σ_{e extra} K_q(e) x_e + b,
//   K_q(δ) = Σ_h P_h(q, q + δ) M_h,  M_h = W_o^h W_v^h (D_out, D_in),
//   b = W_o b_v + b_o,
// the locally connected kernel of query q (Cordonnier et al.'s
// W_eff = Σ_h P_h (W_val^h W_out^h)ᵀ, now with the content terms and per query).
// Its nearest K1 × K2 convolutions, both in torch.nn.Conv2d's layout
// (D_out, D_in, K1, K2), tap (p, r) ↔ δ = (p − c1, r − c2), c = kernel_center
// (PyTorch's padding='same'), zero padding:
//  (a) least squares on this input: the K, b minimising
//      Σ_samples Σ_{q ∈ grid} ‖y_q − b − Σ_{δ ∈ window} K(δ) x_{q+δ}‖²;
//  (b) white input: for grid tokens i.i.d., zero mean, unit variance and the
//      attention held at what it is on this input, the expected squared error
//      Σ_q Σ_δ ‖K_q(δ) − C(δ)‖² over the pairs with q + δ on the grid is least for
//      C(δ) = the mean of K_q(δ) over the grid queries (of every sample) whose
//      key q + δ is on the grid, and b as above.
// Everything is computed in double.
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "tensor/tensor.hpp"

namespace attnconv {

template <class T> struct TorchAttention {
  std::size_t heads = 1;
  Matrix<T> w_qkv;   // (3D, D): [W_q; W_k; W_v], PyTorch's (out, in)
  Vector<T> b_qkv;   // (3D); zeros for a layer without
  Matrix<T> w_proj;  // (D_out, D): out_proj.weight / proj.weight
  Vector<T> b_proj;  // (D_out); zeros for a layer without
};

// The layer on tokens (N, T, D): its output (N, T, D_out), in T with double
// sums, and its attention probabilities P (N, N_h, T, T), P(n, h, q, k).
template <class T> struct AttentionForward {
  xt::xtensor<T, 3> y;
  xt::xtensor<double, 4> p;
};
template <class T> AttentionForward<T> torch_attention_forward(const TorchAttention<T>& layer, const xt::xtensor<T, 3>& x);

// M_h = W_o^h W_v^h (N_h, D_out, D_in) and b = W_o b_v + b_o.
template <class T> xt::xtensor<double, 3> head_maps(const TorchAttention<T>& layer);
template <class T> Vector<double> folded_bias(const TorchAttention<T>& layer);

struct TokenGrid {
  std::size_t extra = 0;  // tokens before the grid
  int h = 0, w = 0;       // the grid, row-major after them
  std::size_t grid() const { return std::size_t(h) * std::size_t(w); }
};

struct ConvolutionalMeasure {
  std::array<int, 2> kernel{};
  // (a) least squares on this input
  Kernel<double> lstsq_weight;  // (D_out, D_in, K1, K2)
  Vector<double> lstsq_bias;    // (D_out)
  std::size_t equations = 0;    // N · H · W (per output channel)
  std::size_t unknowns = 0;     // D_in · K1 · K2 + 1 (per output channel)
  std::size_t rank = 0;         // of the least-squares matrix
  // (b) white input
  Kernel<double> white_weight;
  Vector<double> white_bias;
  // The outputs on grid tokens (N, H·W, D_out): the layer's, and each convolution's.
  xt::xtensor<double, 3> y_grid, y_lstsq, y_white;
  // The layer against Σ_δ K_q(δ) x_{q+δ} + Σ_e K_q(e) x_e + b on grid tokens: the identity the kernels are read from.
  double identity_max_abs = 0, identity_rel_l2 = 0;
  // sqrt(Σ_{n,q,k∈grid} ‖K_q(k−q) − K̄(k−q)‖²_F / Σ ‖K_q(k−q)‖²_F), K̄(δ) the mean of K_q(δ) over
  // the queries (of every sample) with q + δ on the grid, over every offset (not only the window).
  double defect = 0;
  // Per head, averaged over grid queries and samples: attention on grid keys outside the window,
  // on the extra tokens, and Σ_{k∈grid} P(q,k) ‖k − q‖₂ / Σ_{k∈grid} P(q,k) in grid steps.
  std::vector<double> mass_outside, mass_extra, mean_distance;
  // Per head: its mean offset δ̄_h, the mean over grid queries (and samples) of
  // Σ_{k∈grid} P(q,k) (k − q) / Σ_{k∈grid} P(q,k) in grid steps (row, column); its tap,
  // δ̄_h rounded to the nearest integer offset (halves away from zero); and its leak,
  // 1 − P_h(q, q + tap) averaged over the grid queries and samples (the whole
  // attention of a query whose q + tap is off the grid leaks).
  std::vector<std::array<double, 2>> mean_offset;
  std::vector<std::array<int, 2>> tap;
  std::vector<double> leak;
  // The same masses, averaged over heads too.
  double mass_outside_all = 0, mass_extra_all = 0;
};

// x (N, T, D) the tokens the layer received, y (N, T, D_out) its output,
// p (N, N_h, T, T) its attention, m and b from head_maps, folded_bias.
// Throws std::invalid_argument when the shapes disagree or the window does not fit the grid.
ConvolutionalMeasure measure_convolutional(const xt::xtensor<double, 3>& x, const xt::xtensor<double, 3>& y,
                                           const xt::xtensor<double, 4>& p, const xt::xtensor<double, 3>& m,
                                           const Vector<double>& b, const TokenGrid& grid, std::array<int, 2> kernel);

// The attention on grid keys inside the odd K × K window centred on each grid
// query, averaged over grid queries, samples and heads (p as above).
double window_attention(const xt::xtensor<double, 4>& p, const TokenGrid& grid, int k);

// kernel "auto": the smallest odd K (K ≤ min(H, W)) whose K × K window holds at
// least `mass` of the attention (window_attention); the largest odd K that fits
// when none does. `held` is that window's attention.
struct AutoWindow {
  std::array<int, 2> kernel{};
  double held = 0;
  bool reached = false;  // held >= mass
};
AutoWindow smallest_odd_window(const xt::xtensor<double, 4>& p, const TokenGrid& grid, double mass);

}  // namespace attnconv
