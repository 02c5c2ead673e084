#pragma once
// The textbook neighborhood attention, the ground truth of
// src/local/neighborhood_attention.hpp (docs/design.md, "Local attention"):
// every query scores every key of the image, and a key takes part iff it is
// the query's neighbour, per axis (NATTEN's mask stated as a test, not as a window start):
//   same dilation group        key mod d = query mod d, and on the positions = query mod d
//                              (n of them; query i', key k', leader l of the stride group):
//   not causal                 c = clamp(l, window_left, n - 1 - window_right),
//                              -window_left <= k' - c <= window_right
//   causal                     k' <= i' and l - k' < w
// Softmax over the neighbours of q.k + rpb[h, delta / d + w - 1] (no rpb: empty), in long double.
#include "local/neighborhood_attention.hpp"

namespace attnconv::reference {

// Whether key `key` is a neighbour of query `index` along an axis of `length` (the test above).
bool is_neighbor(int index, int key, int length, const NeighborhoodAxis& axis);

template <class T>
HeadMaps<T> neighborhood_attention(const HeadMaps<T>& q, const HeadMaps<T>& k, const HeadMaps<T>& v,
                                   const xt::xtensor<T, 3>& rpb, const Neighborhood& axes);

}  // namespace attnconv::reference
