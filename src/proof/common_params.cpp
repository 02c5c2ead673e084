#include "proof/common_params.hpp"

#include <iterator>
#include <utility>

#include "io/errors.hpp"
#include "proof/conv_geometry.hpp"

namespace attnconv {

FieldOptions<Dtype> dtype_param() {
  return {.name = "dtype", .default_value = Dtype::float64,
          .named = by_name({Dtype::float32, Dtype::float64})};
}

FieldOptions<std::uint64_t> seed_param(std::string help) {
  return {.name = "seed", .help = std::move(help), .default_value = 0, .minimum = 0};
}

FieldOptions<bool> bias_param() {
  return {.name = "bias", .help = "whether the convolution has a bias", .default_value = true};
}

FieldOptions<PaddingMode> padding_mode_param(std::string help) {
  return {.name = "padding_mode", .help = std::move(help), .default_value = PaddingMode::zeros,
          .named = by_name({PaddingMode::zeros, PaddingMode::reflect, PaddingMode::replicate, PaddingMode::circular})};
}

FieldOptions<std::size_t> size_param(std::string name, std::string help, std::optional<double> maximum) {
  return {.name = std::move(name), .help = std::move(help), .minimum = 1, .maximum = maximum};
}

std::array<std::size_t, 3> ConvShape::input() const { return {in_channels, std::size_t(image[0]), std::size_t(image[1])}; }

std::array<std::size_t, 4> ConvShape::weight() const {
  return {out_channels, in_channels / std::size_t(groups), std::size_t(kernel[0]), std::size_t(kernel[1])};
}

namespace {

ParamSpec padding_spec(std::string help) {
  return {.name = "padding", .kind = ParamKind::padding, .default_value = 0, .help = std::move(help)};
}

ParamSpec stride_spec(ParamKind kind) {
  return {.name = "stride", .kind = kind, .default_value = 1, .minimum = 1};
}

ParamSpec dilation_spec(ParamKind kind, std::optional<double> maximum) {
  return {.name = "dilation", .kind = kind, .default_value = 1, .minimum = 1, .maximum = maximum};
}

ParamSpec groups_spec() {
  return {.name = "groups", .kind = ParamKind::integer, .default_value = 1,
          .help = "PyTorch's groups: conv_weight is (C_out, C_in / groups, K...); groups = in_channels is depthwise",
          .minimum = 1};
}

// PyTorch's `groups` divides both channel counts.
int checked_groups(const json& params, std::size_t in_channels, std::size_t out_channels) {
  if (!params.contains("groups")) return 1;
  const int groups = params.at("groups").get<int>();
  if (in_channels % std::size_t(groups) != 0 || out_channels % std::size_t(groups) != 0)
    throw ParamError("groups", "groups " + std::to_string(groups) + " must divide in_channels " +
                                   std::to_string(in_channels) + " and out_channels " + std::to_string(out_channels) +
                                   " (as in PyTorch)");
  return groups;
}

PaddingMode read_padding_mode(const json& params) { return padding_mode_from_string(params.at("padding_mode")); }

}  // namespace

Field<ConvShape> conv_shape(ConvShapeOptions o) {
  std::vector<ParamSpec> specs{
      {.name = "image", .kind = ParamKind::int_pair, .default_value = nullptr, .help = "image size [H, W]", .minimum = 1},
      {.name = "kernel", .kind = ParamKind::int_pair, .default_value = nullptr, .help = o.kernel_help, .minimum = 1,
       .maximum = o.kernel_maximum},
      {.name = "in_channels", .kind = ParamKind::integer, .default_value = nullptr, .help = o.in_help, .minimum = 1},
      {.name = "out_channels", .kind = ParamKind::integer, .default_value = nullptr, .help = o.out_help, .minimum = 1}};
  if (o.groups) specs.push_back(groups_spec());
  return {std::move(specs), [](const json& params, ConvShape& s) {
            s.image = FieldValue<std::array<int, 2>>::read(params.at("image"));
            s.kernel = FieldValue<std::array<int, 2>>::read(params.at("kernel"));
            s.in_channels = params.at("in_channels").get<std::size_t>();
            s.out_channels = params.at("out_channels").get<std::size_t>();
            s.groups = checked_groups(params, s.in_channels, s.out_channels);
          }};
}

Field<ConvGeometry> conv_geometry(ConvGeometryOptions o) {
  FieldOptions<PaddingMode> mode = padding_mode_param(o.padding_mode_help);
  return {{padding_spec("int, [ph, pw], [top, bottom, left, right], \"same\" or \"valid\""), detail::spec_of(mode),
           stride_spec(ParamKind::int_pair), dilation_spec(ParamKind::int_pair, o.dilation_maximum)},
          [](const json& params, ConvGeometry& g) {
            const auto pair = [&](const char* key) { return FieldValue<std::array<int, 2>>::read(params.at(key)); };
            const auto kernel = pair("kernel");
            g.dilation = pair("dilation");
            g.stride = pair("stride");
            g.padding = resolve_padding(params.at("padding"), kernel, g.dilation);
            g.padding_mode = read_padding_mode(params);
            g.groups = params.contains("groups") ? params.at("groups").get<int>() : 1;  // checked by conv_shape
            if (params.at("padding") == "same" && g.stride != std::array<int, 2>{1, 1})
              throw ParamError("padding", "\"same\" padding needs stride 1 (as in PyTorch)");
            check_geometry(g, pair("image"), kernel, "kernel");
          }};
}

Field<Conv1dGeometry> conv1d_geometry() {
  FieldOptions<PaddingMode> mode = padding_mode_param();
  return {{groups_spec(), padding_spec("int, [left, right], \"same\" or \"valid\""), detail::spec_of(mode),
           stride_spec(ParamKind::integer), dilation_spec(ParamKind::integer, std::nullopt)},
          [](const json& params, Conv1dGeometry& g) {
            const json& padding = params.at("padding");
            if (padding.is_array() && padding.size() != 2)
              throw ParamError("padding", "a sequence has two sides: an int, [left, right], \"same\" or \"valid\"");
            const int kernel = params.at("kernel").get<int>(), length = params.at("length").get<int>();
            g.groups = checked_groups(params, params.at("in_channels").get<std::size_t>(),
                                      params.at("out_channels").get<std::size_t>());
            g.stride = params.at("stride").get<int>();
            g.dilation = params.at("dilation").get<int>();
            g.padding_mode = read_padding_mode(params);
            if (padding.is_array()) {  // [left, right]
              g.pad_left = padding[0].get<int>(), g.pad_right = padding[1].get<int>();
            } else {
              const Padding resolved = resolve_padding(padding, {1, kernel}, {1, g.dilation});
              g.pad_left = resolved.left, g.pad_right = resolved.right;
            }
            if (padding == "same" && g.stride != 1)
              throw ParamError("padding", "\"same\" padding needs stride 1 (as in PyTorch)");
            check_geometry(as_2d(g), {1, length}, {1, kernel}, "kernel");
          }};
}

std::vector<TensorDump> conv_dumps(std::string expected, std::string actual, std::vector<TensorDump> more) {
  std::vector<TensorDump> dumps{{"input", "(C_in, H, W)"},
                                {"conv_weight", "(C_out, C_in / groups, K1, K2)"},
                                {"conv_bias", "(C_out); zeros without bias"},
                                {"expected", std::move(expected)},
                                {"actual", std::move(actual)}};
  dumps.insert(dumps.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  return dumps;
}

std::vector<std::size_t> conv_output_shape(const ConvShape& shape, const ConvGeometry& g) {
  const Padding& pad = g.padding;
  return {shape.out_channels,
          std::size_t(conv_output_size(shape.image[0], pad.top, pad.bottom, shape.kernel[0], g.stride[0], g.dilation[0])),
          std::size_t(conv_output_size(shape.image[1], pad.left, pad.right, shape.kernel[1], g.stride[1], g.dilation[1]))};
}

}  // namespace attnconv
