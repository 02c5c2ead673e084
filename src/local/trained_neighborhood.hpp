#pragma once
// Neighborhood attention as NAT models were trained (NATTEN 0.17's
// NeighborhoodAttention2D; Hassani et al., "Neighborhood Attention
// Transformer", CVPR 2023, Eq. 2–3), on the tokens of an H x W grid, with its
// attention probabilities over the whole grid for the trained-attention
// measurement (issue 23; docs/trained_attention.md). With d = D / N_h and head h
// the rows h·d … (h+1)·d − 1 of each block of qkv.weight (3D, D) = [W_q; W_k; W_v]:
//   s_h(q, k) = (W_q^h x_q + b_q^h)·scale · (W_k^h x_k + b_k^h) + rpb[h, (k − q) / dil + K − 1]
//   for k in the K x K neighbourhood of q (neighborhood_start, dilation dil), else −∞,
//   P_h(q, k) = softmax_k s_h(q, k),
//   y_q = Σ_h W_o^h Σ_k P_h(q, k) (W_v^h x_k + b_v^h) + b_o,
// W_o^h the columns h·d … (h+1)·d − 1 of proj.weight (D_out, D). NATTEN's
// scale is head_dim^−1/2 unless qk_scale was given. Sums in double.
#include <cstddef>

#include "local/head_tensor.hpp"

namespace attnconv {

template <class T> struct TrainedNeighborhood {
  std::size_t heads = 1;
  int kernel = 3, dilation = 1;  // kernel_size and dilation, equal on both axes
  double scale = 1;              // multiplies q before the dot product
  xt::xtensor<T, 2> w_qkv;       // (3D, D): qkv.weight, PyTorch's (out, in)
  xt::xtensor<T, 1> b_qkv;       // (3D); zeros for qkv_bias=False
  xt::xtensor<T, 3> rpb;         // (N_h, 2K − 1, 2K − 1); zeros for rel_pos_bias=False
  xt::xtensor<T, 2> w_proj;      // (D_out, D): proj.weight
  xt::xtensor<T, 1> b_proj;      // (D_out)
};

// The layer on tokens x (N, H·W, D), row-major over the grid: its output
// (N, H·W, D_out) and its attention P (N, N_h, H·W, H·W), zero outside each
// query's neighbourhood. Throws std::invalid_argument on shapes that disagree
// or a grid smaller than kernel · dilation.
template <class T> struct NeighborhoodForward {
  xt::xtensor<T, 3> y;
  xt::xtensor<double, 4> p;
};
template <class T>
NeighborhoodForward<T> trained_neighborhood_forward(const TrainedNeighborhood<T>& layer, const xt::xtensor<T, 3>& x,
                                                    int height, int width);

}  // namespace attnconv
