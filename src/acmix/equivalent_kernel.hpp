#pragma once
// What the ACmix convolution path computes (our derivation; docs/design.md, "ACmix
// module"). With P_t = conv{1,2,3} weight/bias (t = q, k, v), N heads, hd = head_dim:
//   f[d*k^2 + kk] = A[d, kk, :] . x + a0[d, kk]
//     A[d, kk, c] = sum_{t,n} fc[kk, t*N + n] W_t[n*hd + d, c]
//     a0[d, kk]   = sum_{t,n} fc[kk, t*N + n] b_t[n*hd + d]
// and dep_conv zero-pads f, so the path is ONE standard k x k convolution of
// [x; 1] (the input with a constant-ones channel appended, zero-padded):
//   K[o, c, a, b]    = sum_kk dep_conv[o, kk, a, b] A[o // N, kk, c]    (c < C_in)
//   K[o, C_in, a, b] = sum_kk dep_conv[o, kk, a, b] a0[o // N, kk]
//   bias[o]          = dep_conv.bias[o] (0 in the reference)
// Padding k // 2 (zeros), stride s. Where the window lies inside the image the
// ones channel contributes the constant sum_ab K[o, C_in, a, b]: a plain biased
// convolution of x; in the border band it does not.
#include "acmix/acmix_module.hpp"
#include "ops/conv2d_blocked.hpp"

namespace attnconv {

template <class T> struct EquivalentConv {
  Kernel<T> weight;  // (C_out, C_in + 1, k, k); the last input channel is the ones channel
  Vector<T> bias;    // (C_out)
  ConvGeometry geometry;
};

template <class T> EquivalentConv<T> conv_path_equivalent(const AcmixConfig& config, const AcmixWeights<T>& w);

// The plain biased convolution of x alone: weight K[:, :C_in], bias + sum_ab K[o, C_in, a, b].
template <class T> EquivalentConv<T> plain_conv_of(const EquivalentConv<T>& equivalent);

// [x; 1]: (C + 1, H, W).
template <class T> Image<T> append_ones_channel(const Image<T>& x);

// Output rows [first, last] whose k x k window lies wholly inside the image (the
// complement is the border band); empty when first > last.
std::array<int, 2> interior_range(int input, int kernel, int stride);

}  // namespace attnconv
