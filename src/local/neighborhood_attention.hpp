#pragma once
// Neighborhood attention (Hassani et al., "Neighborhood Attention Transformer",
// CVPR 2023), with NATTEN's window and bias semantics, as plain loops
// (docs/design.md, "Local attention"). Per head h and query pixel (i, j):
//   keys     the K x K window starting at (neighborhood_start(i, H), neighborhood_start(j, W)),
//            dilation d: every d-th pixel from there (K keys per axis)
//   score    q_(i,j) . k_key + rpb[h, delta1 / d + K - 1, delta2 / d + K - 1],  delta = key - query
//   output   sum_key softmax(score) v_key
// No scaling of q here: the caller scales (NATTEN's module multiplies q by D^-1/2 first).
#include "local/head_tensor.hpp"

namespace attnconv {

// The first key of query `index` along an axis of `length`, window `kernel` (odd),
// dilation d. Dilation 1, r = kernel / 2:
//   max(i - r, 0) + (i + r >= L ? L - i - r - 1 : 0),
// so the window is clamped inside the axis and always holds `kernel` keys.
// Dilation d: the same formula on the positions = i mod d (NATTEN's dilated
// neighbourhood), i.e. on index i / d of a sequence of ceil((L - i mod d) / d).
// Throws std::invalid_argument unless length >= kernel * dilation (NATTEN's requirement).
int neighborhood_start(int index, int length, int kernel, int dilation);

// q, k: (heads, H, W, D_k); v: (heads, H, W, D_v); rpb: (heads, 2K - 1, 2K - 1).
// Returns (heads, H, W, D_v). Throws std::invalid_argument on inconsistent shapes.
template <class T>
HeadMaps<T> neighborhood_attention(const HeadMaps<T>& q, const HeadMaps<T>& k, const HeadMaps<T>& v,
                                   const xt::xtensor<T, 3>& rpb, int kernel, int dilation);

// Whether an axis of `length` pixels holds NATTEN's window: an odd kernel, dilation
// >= 1, length >= kernel * dilation. neighborhood_start (and so neighborhood_attention,
// on both axes) refuses every other.
bool neighborhood_window_fits(int length, int kernel, int dilation);

}  // namespace attnconv
