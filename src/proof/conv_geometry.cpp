#include "proof/conv_geometry.hpp"

#include "io/errors.hpp"

namespace attnconv {

void check_geometry(const ConvGeometry& g, std::array<int, 2> image, std::array<int, 2> kernel,
                    const std::string& kernel_key) {
  const std::array<int, 4> pads{g.padding.top, g.padding.bottom, g.padding.left, g.padding.right};
  for (int side = 0; side < 4; ++side) {
    const int extent = image[side / 2];
    if (g.padding_mode == PaddingMode::reflect && pads[side] >= extent)
      throw ParamError("padding", "reflect padding must be smaller than the image side (" + std::to_string(pads[side]) +
                                      " >= " + std::to_string(extent) + ")");
    if (g.padding_mode == PaddingMode::circular && pads[side] > extent)
      throw ParamError("padding", "circular padding must not exceed the image side (" + std::to_string(pads[side]) +
                                      " > " + std::to_string(extent) + ")");
  }
  for (int axis = 0; axis < 2; ++axis) {
    const int before = axis ? g.padding.left : g.padding.top, after = axis ? g.padding.right : g.padding.bottom;
    if (conv_output_size(image[axis], before, after, kernel[axis], g.stride[axis], g.dilation[axis]) < 1)
      throw ParamError(kernel_key, "the receptive field " + std::to_string(g.dilation[axis] * (kernel[axis] - 1) + 1) +
                                       " exceeds the padded input (" + std::to_string(image[axis] + before + after) +
                                       ") along axis " + std::to_string(axis));
  }
}

}  // namespace attnconv
