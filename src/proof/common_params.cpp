#include "proof/common_params.hpp"

#include <utility>

#include "io/errors.hpp"

namespace attnconv {

ParamSpec dtype_param() {
  return {.name = "dtype", .kind = ParamKind::string, .default_value = "float64", .choices = {"float32", "float64"}};
}

ParamSpec seed_param(std::string help) {
  return {.name = "seed", .kind = ParamKind::integer, .default_value = 0, .help = std::move(help), .minimum = 0};
}

ParamSpec bias_param() {
  return {.name = "bias", .kind = ParamKind::boolean, .default_value = true, .help = "whether the convolution has a bias"};
}

ParamSpec kernel_param(std::string help, ParamKind kind, std::optional<double> maximum) {
  return {.name = "kernel", .kind = kind, .default_value = nullptr, .help = std::move(help), .minimum = 1,
          .maximum = maximum};
}

ParamSpec padding_param(std::string help) {
  return {.name = "padding", .kind = ParamKind::padding, .default_value = 0, .help = std::move(help)};
}

ParamSpec padding_mode_param(std::string help) {
  return {.name = "padding_mode", .kind = ParamKind::string, .default_value = "zeros", .help = std::move(help),
          .choices = {"zeros", "reflect", "replicate", "circular"}};
}

ParamSpec stride_param(ParamKind kind, std::string help) {
  return {.name = "stride", .kind = kind, .default_value = 1, .help = std::move(help), .minimum = 1};
}

ParamSpec dilation_param(ParamKind kind, std::optional<double> maximum) {
  return {.name = "dilation", .kind = kind, .default_value = 1, .minimum = 1, .maximum = maximum};
}

ParamSpec image_param() {
  return {.name = "image", .kind = ParamKind::int_pair, .default_value = nullptr, .help = "image size [H, W]", .minimum = 1};
}

ParamSpec groups_param() {
  return {.name = "groups", .kind = ParamKind::integer, .default_value = 1,
          .help = "PyTorch's groups: conv_weight is (C_out, C_in / groups, K...); groups = in_channels is depthwise",
          .minimum = 1};
}

std::array<std::size_t, 3> ConvShape::input() const { return {in_channels, std::size_t(image[0]), std::size_t(image[1])}; }

std::array<std::size_t, 4> ConvShape::weight() const {
  return {out_channels, in_channels / std::size_t(groups), std::size_t(kernel[0]), std::size_t(kernel[1])};
}

int case_groups(const Case& c, std::size_t in_channels, std::size_t out_channels) {
  if (!c.params.contains("groups")) return 1;
  const int groups = get_int(c.params, "groups");
  if (in_channels % std::size_t(groups) != 0 || out_channels % std::size_t(groups) != 0)
    throw ParamError("groups", "groups " + std::to_string(groups) + " must divide in_channels " +
                                   std::to_string(in_channels) + " and out_channels " + std::to_string(out_channels) +
                                   " (as in PyTorch)");
  return groups;
}

ConvShape case_conv_shape(const Case& c) {
  ConvShape shape{.image = get_int_pair(c.params, "image"),
                  .kernel = get_int_pair(c.params, "kernel"),
                  .in_channels = std::size_t(get_int(c.params, "in_channels")),
                  .out_channels = std::size_t(get_int(c.params, "out_channels"))};
  shape.groups = case_groups(c, shape.in_channels, shape.out_channels);
  return shape;
}

Dtype case_dtype(const Case& c) { return dtype_from_string(c.params.at("dtype").get<std::string>()); }

std::uint64_t case_seed(const Case& c) { return std::uint64_t(c.params.at("seed").get<long long>()); }

ConvGeometry case_geometry(const Case& c) {
  ConvGeometry g;
  g.dilation = get_int_pair(c.params, "dilation");
  g.stride = get_int_pair(c.params, "stride");
  g.padding = resolve_padding(c.params.at("padding"), get_int_pair(c.params, "kernel"), g.dilation);
  g.padding_mode = padding_mode_from_string(c.params.at("padding_mode"));
  g.groups = c.params.contains("groups") ? get_int(c.params, "groups") : 1;  // checked by case_conv_shape
  if (c.params.at("padding") == "same" && g.stride != std::array<int, 2>{1, 1})
    throw ParamError("padding", "\"same\" padding needs stride 1 (as in PyTorch)");
  return g;
}

std::vector<std::size_t> conv_output_shape(const ConvShape& shape, const ConvGeometry& g) {
  const Padding& pad = g.padding;
  return {shape.out_channels,
          std::size_t(conv_output_size(shape.image[0], pad.top, pad.bottom, shape.kernel[0], g.stride[0], g.dilation[0])),
          std::size_t(conv_output_size(shape.image[1], pad.left, pad.right, shape.kernel[1], g.stride[1], g.dilation[1]))};
}

}  // namespace attnconv
