#pragma once
// Padding of a (C, H, W) image with PyTorch's semantics (torch.nn.functional.pad):
// zeros, reflect (mirror without repeating the edge), replicate (repeat the
// edge), circular (wrap around).
#include <array>
#include <string>

#include "tensor/tensor.hpp"

namespace attnconv {

struct Padding {
  int top = 0, bottom = 0, left = 0, right = 0;
};

enum class PaddingMode { zeros, reflect, replicate, circular };

PaddingMode padding_mode_from_string(const std::string& name);  // throws std::invalid_argument
std::string to_string(PaddingMode mode);

// PyTorch's padding='same' for stride 1: total = dilation*(K-1) per axis, the
// smaller half before, the extra row/column after (bottom/right).
Padding same_padding(std::array<int, 2> kernel, std::array<int, 2> dilation);

// Index into [0, n) of padded coordinate p (which may lie outside) under `mode`;
// returns -1 for a zero of the zeros mode.
int source_index(int p, int n, PaddingMode mode);

template <class T> Image<T> pad(const Image<T>& x, const Padding& padding, PaddingMode mode);

}  // namespace attnconv
