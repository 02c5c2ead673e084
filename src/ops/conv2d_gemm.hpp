#pragma once
// The 2D convolution of docs/design.md, "Convolution" (cross-correlation, as in PyTorch),
//   y[o,i,j] = b[o] + sum_{c,p,q} W[o,c,p,q] * xpad[c, i*s1 + p*d1, j*s2 + q*d2],
// as im2col + GEMM: for a fixed block of output rows, the patches
// cols[(c,p,q), (i,j)] = xpad[c, i*s1 + p*d1, j*s2 + q*d2] are gathered and
// Y[:, block] = b + W cols is one (C_out x C_in K1 K2) by (C_in K1 K2 x block) product
// (single-threaded OpenBLAS per block; blocks spread over engine_threads()).
// The same sum in BLAS's order, not b, c, p, q: within round-off of
// reference::conv2d (tests/test_fast_paths.cpp), bit-identical for any thread
// count (the blocks are fixed). Memory: one block of patches per thread (<= 8 MiB, at least one output row).
#include <optional>

#include "ops/geometry.hpp"

namespace attnconv {

template <class T>
Image<T> conv2d_gemm(const Image<T>& x, const Kernel<T>& weight, const std::optional<Vector<T>>& bias,
                     const ConvGeometry& geometry);

}  // namespace attnconv
