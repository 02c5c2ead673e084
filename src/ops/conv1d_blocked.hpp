#pragma once
// The fast 1D convolution: conv2d_blocked on a 1 x L image (the paper's 1D
// remark treats a sequence the same way): x (C, L) -> (C, 1, L), weight
// (C_out, C_in/groups, K) -> (C_out, C_in/groups, 1, K), padding (left, right),
// stride s, dilation d along the length, the same groups. Checked against
// reference::conv1d.
#include <optional>

#include "ops/conv2d_blocked.hpp"

namespace attnconv {

ConvGeometry as_2d(const Conv1dGeometry& g);
template <class T> Image<T> as_image(const Sequence<T>& x);          // (C, 1, L)
template <class T> Kernel<T> as_kernel(const Kernel1d<T>& w);        // (C_out, C_in/groups, 1, K)
template <class T> Sequence<T> as_sequence(const Image<T>& x);       // (C, 1, L) -> (C, L)

template <class T>
Sequence<T> conv1d_blocked(const Sequence<T>& x, const Kernel1d<T>& weight, const std::optional<Vector<T>>& bias,
                           const Conv1dGeometry& geometry);

}  // namespace attnconv
