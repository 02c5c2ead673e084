#pragma once
// Neighborhood attention (Hassani et al., "Neighborhood Attention Transformer",
// CVPR 2023), with NATTEN's window semantics, as plain loops (docs/design.md,
// "Local attention"). Per head h and query pixel (i, j):
//   keys     per axis the window of neighborhood_keys (NATTEN's current mask: window w,
//            even or odd, stride s, dilation d, causal or not)
//   score    q_(i,j) . k_key + rpb[h, delta1 / d1 + w1 - 1, delta2 / d2 + w2 - 1],  delta = key - query
//   output   sum_key softmax(score) v_key
// No scaling of q here: the caller scales (NATTEN's module multiplies q by D^-1/2 first).
// The bias is NATTEN 0.17's rpb (odd window, no stride, not causal); current
// NATTEN has no positional bias: an empty rpb (size 0) is none.
#include <array>

#include "local/head_tensor.hpp"

namespace attnconv {

// One axis of a neighbourhood, NATTEN's parameters.
struct NeighborhoodAxis {
  int window = 3;       // w >= 1: window_left = w / 2 keys before the centre, window_right after it
  int stride = 1;       // s, 1 <= s <= w: a query takes the window of its stride group's leader
  int dilation = 1;     // d >= 1: the window within the positions = i mod d
  bool causal = false;  // the window ends at the query
};
using Neighborhood = std::array<NeighborhoodAxis, 2>;  // (row, column)

// NATTEN's split of a window w around its centre: w = window_left + 1 + window_right,
//   window_left = floor(w / 2),  window_right = floor(w / 2) + (w mod 2) - 1
// (an even window holds one key more before the centre than after it).
int window_left(int w);
int window_right(int w);

// The keys of query `index` along an axis of `length`: first, first + d, ...,
// first + (count - 1) d. On the positions = index mod d (a sequence of
// n = ceil((length - index mod d) / d), query i' = index / d), the stride group
// leader is
//   not causal  l = min(floor(i' / s) s + floor(s / 2), n - 1)   (the group's centre, the right one for even s)
//   causal      l = min(floor(i' / s) s + s - 1, n - 1)           (the group's last query)
// and the window, on that sequence,
//   not causal  start = max(l - window_left, 0) + (n - window_right - l - 1 if l + window_right >= n),  w keys
//   causal      start = max(l - w + 1, 0), ending at the query i' (its keys: start .. i')
// (NATTEN's get_win_start / get_win_end with stride). Throws std::invalid_argument
// unless w >= 1, 1 <= s <= w, d >= 1, length >= w d (NATTEN's requirements) and 0 <= index < length.
struct AxisKeys {
  int first = 0, count = 0;
};
AxisKeys neighborhood_keys(int index, int length, const NeighborhoodAxis& axis);

// The first key of query `index`, window `kernel` (odd), dilation d, no stride,
// not causal: neighborhood_keys(...).first. Dilation 1, r = kernel / 2:
//   max(i - r, 0) + (i + r >= L ? L - i - r - 1 : 0),
// so the window is clamped inside the axis and always holds `kernel` keys.
// Throws std::invalid_argument unless `kernel` is odd and length >= kernel * dilation.
int neighborhood_start(int index, int length, int kernel, int dilation);

// q, k: (heads, H, W, D_k); v: (heads, H, W, D_v); rpb: (heads, 2 w1 - 1, 2 w2 - 1)
// or empty (no bias). Every key of a window is within w - 1 steps of d of the
// query (the window holds the query), so the index is in range.
// Returns (heads, H, W, D_v). Throws std::invalid_argument on inconsistent shapes.
template <class T>
HeadMaps<T> neighborhood_attention(const HeadMaps<T>& q, const HeadMaps<T>& k, const HeadMaps<T>& v,
                                   const xt::xtensor<T, 3>& rpb, const Neighborhood& axes);

// The square odd window `kernel` with dilation d on both axes (NATTEN 0.17's
// parameters): rpb (heads, 2K - 1, 2K - 1).
template <class T>
HeadMaps<T> neighborhood_attention(const HeadMaps<T>& q, const HeadMaps<T>& k, const HeadMaps<T>& v,
                                   const xt::xtensor<T, 3>& rpb, int kernel, int dilation);

// Whether an axis of `length` pixels holds NATTEN's window: an odd kernel, dilation
// >= 1, length >= kernel * dilation. neighborhood_start (and so neighborhood_attention,
// on both axes) refuses every other.
bool neighborhood_window_fits(int length, int kernel, int dilation);

}  // namespace attnconv
