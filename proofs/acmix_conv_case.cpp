#include "acmix_conv_case.hpp"

#include "harness/conv_geometry.hpp"
#include "harness/errors.hpp"
#include "harness/npy.hpp"
#include "tensor/random.hpp"

namespace attnconv {

std::vector<ParamSpec> conv_case_params() {
  return {
      {"image", ParamKind::int_pair, nullptr, "image size [H, W]", 1},
      {"kernel", ParamKind::int_pair, nullptr, "kernel size [K1, K2]", 1},
      {"in_channels", ParamKind::integer, nullptr, "C_in", 1},
      {"out_channels", ParamKind::integer, nullptr, "C_out", 1},
      {"padding", ParamKind::padding, 0, "int, [ph, pw], [top, bottom, left, right], \"same\" or \"valid\""},
      {"padding_mode", ParamKind::string, "zeros", "other modes: pad first, then decompose", std::nullopt, false,
       {"zeros", "reflect", "replicate", "circular"}},
      {"stride", ParamKind::int_pair, 1, "", 1},
      {"dilation", ParamKind::int_pair, 1, "", 1},
      {"bias", ParamKind::boolean, true, "whether the convolution has a bias"},
      {"dtype", ParamKind::string, "float64", "", std::nullopt, false, {"float32", "float64"}},
      {"seed", ParamKind::integer, 0, "seed of the input and weights", 0},
  };
}

ConvGeometry conv_case_geometry(const Case& c) {
  ConvGeometry g;
  g.dilation = get_int_pair(c.params, "dilation");
  g.stride = get_int_pair(c.params, "stride");
  g.padding = resolve_padding(c.params.at("padding"), get_int_pair(c.params, "kernel"), g.dilation);
  g.padding_mode = padding_mode_from_string(c.params.at("padding_mode"));
  return g;
}

void validate_conv_case(const Case& c) {
  const auto image = get_int_pair(c.params, "image"), kernel = get_int_pair(c.params, "kernel");
  const ConvGeometry g = conv_case_geometry(c);
  if (c.params["padding"] == "same" && g.stride != std::array<int, 2>{1, 1})
    throw ParamError("padding", "\"same\" padding needs stride 1 (as in PyTorch)");
  check_geometry(g, image, kernel, "kernel");
  check_tensor_names(c, {"input", "conv_weight", "conv_bias"});
  if (c.weights.contains("conv_bias") && !c.params.at("bias").get<bool>())
    throw ParamError("bias", "weights.conv_bias is given but \"bias\" is false");
}

std::map<std::string, std::vector<std::size_t>> conv_case_tensor_shapes(const Case& c) {
  const auto image = get_int_pair(c.params, "image"), kernel = get_int_pair(c.params, "kernel");
  const std::size_t c_in = std::size_t(get_int(c.params, "in_channels"));
  const std::size_t c_out = std::size_t(get_int(c.params, "out_channels"));
  std::map<std::string, std::vector<std::size_t>> out{
      {"input", {c_in, std::size_t(image[0]), std::size_t(image[1])}},
      {"conv_weight", {c_out, c_in, std::size_t(kernel[0]), std::size_t(kernel[1])}}};
  if (c.params.at("bias").get<bool>()) out["conv_bias"] = {c_out};
  return out;
}

template <class T> ConvCase<T> conv_case_tensors(const Case& c) {
  const auto image = get_int_pair(c.params, "image"), kernel = get_int_pair(c.params, "kernel");
  const std::size_t c_in = std::size_t(get_int(c.params, "in_channels"));
  const std::size_t c_out = std::size_t(get_int(c.params, "out_channels"));
  const Random random(std::uint64_t(c.params.at("seed").get<long long>()));
  const std::array<std::size_t, 3> x_shape{c_in, std::size_t(image[0]), std::size_t(image[1])};
  const std::array<std::size_t, 4> w_shape{c_out, c_in, std::size_t(kernel[0]), std::size_t(kernel[1])};
  ConvCase<T> conv;
  conv.input = has_case_tensor(c, "input")
                   ? Image<T>(load_case_tensor<T>(c, "input", {x_shape.begin(), x_shape.end()}))
                   : random.stream(purpose_id("input")).uniform_tensor<T, 3>(x_shape);
  conv.weight = has_case_tensor(c, "conv_weight")
                    ? Kernel<T>(load_case_tensor<T>(c, "conv_weight", {w_shape.begin(), w_shape.end()}))
                    : random.stream(purpose_id("conv_weight")).uniform_tensor<T, 4>(w_shape);
  if (c.params.at("bias").get<bool>())
    conv.bias = has_case_tensor(c, "conv_bias") ? Vector<T>(load_case_tensor<T>(c, "conv_bias", {c_out}))
                                                : random.stream(purpose_id("conv_bias")).uniform_tensor<T, 1>({c_out});
  conv.geometry = conv_case_geometry(c);
  return conv;
}

template <class T> std::vector<NamedTensor> conv_case_dump(const ConvCase<T>& conv) {
  return {{"input", xt::xarray<T>(conv.input)},
          {"conv_weight", xt::xarray<T>(conv.weight)},
          {"conv_bias", xt::xarray<T>(conv.bias ? *conv.bias : Vector<T>(xt::zeros<T>({conv.weight.shape(0)})))}};
}

template ConvCase<float> conv_case_tensors(const Case&);
template ConvCase<double> conv_case_tensors(const Case&);
template std::vector<NamedTensor> conv_case_dump(const ConvCase<float>&);
template std::vector<NamedTensor> conv_case_dump(const ConvCase<double>&);

}  // namespace attnconv
