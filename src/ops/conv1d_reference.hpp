#pragma once
// 1D convolution as the 2D reference on a 1 x L image (the paper's 1D remark
// treats a sequence the same way): x (C, L) -> (C, 1, L), weight (C_out, C_in, K)
// -> (C_out, C_in, 1, K), padding (left, right), stride s, dilation d along the length.
#include <optional>

#include "ops/conv2d_reference.hpp"

namespace attnconv {

template <class T> using Sequence = xt::xtensor<T, 2>;  // (C, L)
template <class T> using Kernel1d = xt::xtensor<T, 3>;  // (C_out, C_in, K)

struct Conv1dGeometry {
  int pad_left = 0, pad_right = 0;
  PaddingMode padding_mode = PaddingMode::zeros;
  int stride = 1, dilation = 1;
};

ConvGeometry as_2d(const Conv1dGeometry& g);
template <class T> Image<T> as_image(const Sequence<T>& x);          // (C, 1, L)
template <class T> Kernel<T> as_kernel(const Kernel1d<T>& w);        // (C_out, C_in, 1, K)
template <class T> Sequence<T> as_sequence(const Image<T>& x);       // (C, 1, L) -> (C, L)

template <class T>
Sequence<T> conv1d_reference(const Sequence<T>& x, const Kernel1d<T>& weight, const std::optional<Vector<T>>& bias,
                             const Conv1dGeometry& geometry);

}  // namespace attnconv
