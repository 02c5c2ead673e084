#pragma once
// A grouped 2D convolution (PyTorch nn.Conv2d with `groups`), counted: the
// textbook reference::conv2d, whose input channels split into `groups` equal
// blocks, output channel o reading block o / (C_out / groups); weight
// (C_out, C_in / groups, K1, K2); groups = C_in is a depthwise convolution. Used
// for ACmix's shift-initialised dep_conv and for the "improved shift" (a
// depthwise convolution with a one-hot kernel).
#include <optional>
#include <string>

#include "acmix/op_counter.hpp"
#include "ops/geometry.hpp"

namespace attnconv {

// Adds C_out * (C_in / groups) * K1 * K2 * H_out * W_out multiply-adds under `label`.
template <class T>
Image<T> grouped_conv2d(const Image<T>& x, const Kernel<T>& weight, const std::optional<Vector<T>>& bias, int groups,
                        const ConvGeometry& geometry, OpCounter& counter, const std::string& label);

}  // namespace attnconv
