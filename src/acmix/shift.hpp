#pragma once
// Stage II of the convolution decomposition (Pan et al., CVPR 2022, Eq. 2-4):
// a shift with zero fill, and the same shift as a depthwise convolution with a
// one-hot kernel (the paper's "improved shift", Sec. 3.4).
#include <array>

#include "acmix/op_counter.hpp"
#include "ops/conv2d_blocked.hpp"

namespace attnconv {

// out[c, i, j] = g[c, i*s1 + offset[0], j*s2 + offset[1]], 0 where that lies outside g.
// A pure data movement: counts nothing.
template <class T>
Image<T> shift_zero_fill(const Image<T>& g, std::array<int, 2> offset, std::array<int, 2> stride,
                         std::array<int, 2> out_size);

// One-hot depthwise kernel (C, 1, K1, K2): 1 at (p, q), 0 elsewhere.
template <class T> Kernel<T> one_hot_depthwise_kernel(std::size_t channels, std::array<int, 2> kernel, int p, int q);

// The shift by kernel position (p, q) of a convolution with `geometry` (zero
// padding), done as a depthwise convolution with the one-hot kernel:
// equal to shift_zero_fill(g, {p*d1 - top, q*d2 - left}, stride, out_size).
// Counts its multiply-adds under "stage2.depthwise_shift".
template <class T>
Image<T> shift_depthwise(const Image<T>& g, std::array<int, 2> kernel, int p, int q, const ConvGeometry& geometry,
                         OpCounter& counter);

}  // namespace attnconv
