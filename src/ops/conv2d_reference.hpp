#pragma once
// The ground truth: a direct-loop 2D convolution (cross-correlation, as in
// every deep-learning framework). DESIGN.md, "Convolution":
//   y[o,i,j] = b[o] + sum_{c,p,q} W[o,c,p,q] * xpad[c, i*s1 + p*d1, j*s2 + q*d2]
//   H_out = (H + top + bottom - d1*(K1-1) - 1) // s1 + 1   (likewise W_out)
// No BLAS, no cleverness: anyone can check it by eye.
#include <array>
#include <optional>

#include "ops/padding.hpp"

namespace attnconv {

struct ConvGeometry {
  Padding padding;
  PaddingMode padding_mode = PaddingMode::zeros;
  std::array<int, 2> stride{1, 1};
  std::array<int, 2> dilation{1, 1};
};

// Output size along one axis; <= 0 when the receptive field exceeds the padded input.
int conv_output_size(int input, int pad_before, int pad_after, int kernel, int stride, int dilation);

template <class T>
Image<T> conv2d_reference(const Image<T>& x, const Kernel<T>& weight, const std::optional<Vector<T>>& bias,
                          const ConvGeometry& geometry);

}  // namespace attnconv
