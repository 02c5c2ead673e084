#pragma once
// The geometry of a convolution (docs/design.md, "Convolution"): padding
// (top, bottom, left, right) and its mode, stride and dilation per axis, and
// the output size it gives,
//   H_out = (H + top + bottom - d1*(K1-1) - 1) // s1 + 1   (likewise W_out),
// and PyTorch's `groups`: the input and output channels split into `groups`
// equal blocks, output channel o reading only block o / (C_out / groups), so
// the weight is (C_out, C_in / groups, K1, K2) (docs/design.md, "Groups").
#include <array>
#include <cstddef>

#include "ops/padding.hpp"

namespace attnconv {

struct ConvGeometry {
  Padding padding;
  PaddingMode padding_mode = PaddingMode::zeros;
  std::array<int, 2> stride{1, 1};
  std::array<int, 2> dilation{1, 1};
  int groups = 1;
};

// A sequence's convolution: padding (left, right), stride s, dilation d along the length.
struct Conv1dGeometry {
  int pad_left = 0, pad_right = 0;
  PaddingMode padding_mode = PaddingMode::zeros;
  int stride = 1, dilation = 1;
  int groups = 1;
};

// The input channels of one group, C_in / groups, after checking that x's
// C_in channels, the weight's C_out x C_in / groups channels and `groups`
// agree (groups >= 1 divides C_in and C_out); throws std::invalid_argument
// naming `who` otherwise.
int group_in_channels(std::size_t c_in, std::size_t weight_out, std::size_t weight_in, int groups, const char* who);

// Output size along one axis; <= 0 when the receptive field exceeds the padded input.
int conv_output_size(int input, int pad_before, int pad_after, int kernel, int stride, int dilation);

}  // namespace attnconv
