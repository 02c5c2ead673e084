#pragma once
// The fast 2D convolution the proofs run: the convolution of docs/design.md,
// "Convolution" (cross-correlation, as in PyTorch),
//   y[o,i,j] = b[o] + sum_{c,p,q} W[o,c,p,q] * xpad[g(o)*C_in/groups + c, i*s1 + p*d1, j*s2 + q*d2],
// g(o) = o / (C_out/groups), weight (C_out, C_in/groups, K1, K2) (ops/geometry.hpp),
// with its loops blocked over output rows for the cache, the blocks spread over
// engine_threads() and the inner loop cloned for AVX2. Each output still sums
// b, then c, p, q in that order, so it equals reference::conv2d bit for bit
// (tests/unit/test_fast_paths.cpp).
#include <optional>

#include "ops/geometry.hpp"

namespace attnconv {

template <class T>
Image<T> conv2d_blocked(const Image<T>& x, const Kernel<T>& weight, const std::optional<Vector<T>>& bias,
                        const ConvGeometry& geometry);

}  // namespace attnconv
