#pragma once
// Checks that a convolution geometry is one PyTorch accepts for an image.
#include <array>
#include <string>

#include "ops/geometry.hpp"

namespace attnconv {

// Padding modes fit the image (reflect < side, circular <= side) and the
// receptive field fits the padded image; throws ParamError naming `padding` or `kernel_key`.
void check_geometry(const ConvGeometry& g, std::array<int, 2> image, std::array<int, 2> kernel,
                    const std::string& kernel_key);

}  // namespace attnconv
