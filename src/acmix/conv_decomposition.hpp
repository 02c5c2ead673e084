#pragma once
// Pan et al., CVPR 2022, Sec. 3.1, Eq. (2)-(4): a k1 x k2 convolution is
//   Stage I:  g_pq = W[:, :, p, q] x                  (k1*k2 1x1 convolutions, grouped as the convolution)
//   Stage II: y[i, j] = b + sum_pq g_pq[i*s1 + p*d1 - top, j*s2 + q*d2 - left]   (zero outside)
// (docs/design.md, "ACmix decomposition"). Any kernel shape, padding, stride and
// dilation; a padding mode other than zeros pads first, then decomposes.
#include "acmix/op_counter.hpp"
#include "ops/conv2d_blocked.hpp"

namespace attnconv {

enum class ShiftMethod {
  tensor_shift,  // shift_zero_fill
  depthwise,     // one-hot depthwise convolution ("improved shift")
  fused,         // Stage I computed only at the pixels Stage II keeps, added in place (below)
};

// Counts "stage1.projection" (k1*k2*C_out*(C_in/groups)*H*W) and "stage2.shift_sum"
// (k1*k2*C_out*H_out*W_out additions), plus "stage2.depthwise_shift" for that method.
// fused: the same sums as tensor_shift without its memory traffic: for each tap,
// W[:, :, p, q] times the input at the pixels the shift reads (gathered in fixed
// blocks of output pixels, spread over engine_threads()), added to y where the shift
// puts them; no 1x1 output over the whole grid, no shifted copy. It counts what
// tensor_shift counts (the paper's Stage I over the whole input), though it computes
// Stage I only at the pixels kept (a stride s keeps about 1/s^2 of them).
template <class T>
Image<T> conv2d_decomposed(const Image<T>& x, const Kernel<T>& weight, const std::optional<Vector<T>>& bias,
                           const ConvGeometry& geometry, ShiftMethod method, OpCounter& counter);

}  // namespace attnconv
