#pragma once
// The windows of the local attention variants as rules for
// reference::masked_attention, stated from their definitions (docs/design.md,
// "Local attention", "ACmix module") and written apart from the loops of
// src/local/ and src/acmix/. Pixels are flat indices, row * width + column.
#include "reference/masked_attention.hpp"
#include "tensor/tensor.hpp"

namespace attnconv::reference {

// Neighborhood attention (Hassani et al., CVPR 2023, NATTEN), H x W map, window
// K = 2r + 1, dilation d. Per axis of L pixels, the keys of query i are the K
// pixels of its residue class mod d nearest to it, clamped inside the axis:
// c d + i mod d for c in [c0, c0 + K), c0 = clamp(i div d - r, 0, n - K), n the
// number of pixels of the class. bias = rpb[h, delta1 / d + K - 1, delta2 / d + K - 1],
// delta = key - query. rpb (heads, 2K - 1, 2K - 1). Needs L >= K d.
template <class T> WindowRule neighborhood_window(const xt::xtensor<T, 3>& rpb, int height, int width, int kernel, int dilation);

// Swin's (shifted) windows (Liu et al., ICCV 2021), Hp x Wp map, window M,
// shift s: pixel p sits at rolled position r = (p - s) mod (Hp, Wp); query and
// key share a window iff r_query div M = r_key div M per axis. bias =
// table[(a1 - b1 + M - 1)(2M - 1) + (a2 - b2 + M - 1), h], a = r_query mod M,
// b = r_key mod M, plus -100 when s > 0 and the two rolled positions lie in
// different regions ([0, Hp - M), [Hp - M, Hp - s), [Hp - s, Hp) per axis).
// table ((2M - 1)^2, heads).
template <class T> WindowRule swin_window(const Matrix<T>& table, int height, int width, int window, int shift);

// ACmix's attention window (Pan et al., CVPR 2022): query q = output pixel
// (o1 s, o2 s) of the ceil(H / s) x ceil(W / s) output; its keys are the pixels
// q + a - K / 2 for a in [0, K) per axis, reflected at the sides (PyTorch's
// ReflectionPad: -1 -> 1, L -> L - 2), a key as many times as it is reached.
// bias = q_scaled . (pe_query - pe_key): query (heads, N_q, head_dim) the
// scaled queries, pe (head_dim, H, W) the position features.
template <class T>
WindowRule acmix_window(const xt::xtensor<T, 3>& query, const Image<T>& pe, int kernel, int stride);

}  // namespace attnconv::reference
