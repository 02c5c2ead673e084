#pragma once
// The geometry of a convolution (docs/design.md, "Convolution"): padding
// (top, bottom, left, right) and its mode, stride and dilation per axis, and
// the output size it gives,
//   H_out = (H + top + bottom - d1*(K1-1) - 1) // s1 + 1   (likewise W_out).
#include <array>

#include "ops/padding.hpp"

namespace attnconv {

struct ConvGeometry {
  Padding padding;
  PaddingMode padding_mode = PaddingMode::zeros;
  std::array<int, 2> stride{1, 1};
  std::array<int, 2> dilation{1, 1};
};

// A sequence's convolution: padding (left, right), stride s, dilation d along the length.
struct Conv1dGeometry {
  int pad_left = 0, pad_right = 0;
  PaddingMode padding_mode = PaddingMode::zeros;
  int stride = 1, dilation = 1;
};

// Output size along one axis; <= 0 when the receptive field exceeds the padded input.
int conv_output_size(int input, int pad_before, int pad_after, int kernel, int stride, int dilation);

}  // namespace attnconv
