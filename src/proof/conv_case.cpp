#include "proof/conv_case.hpp"

#include "harness/conv_geometry.hpp"
#include "harness/errors.hpp"
#include "harness/npy.hpp"
#include "proof/case_tensors.hpp"
#include "proof/common_params.hpp"

namespace attnconv {

std::vector<ParamSpec> conv_case_params() {
  return {
      {.name = "image", .kind = ParamKind::int_pair, .default_value = nullptr, .help = "image size [H, W]", .minimum = 1},
      kernel_param(),
      {.name = "in_channels", .kind = ParamKind::integer, .default_value = nullptr, .help = "C_in", .minimum = 1},
      {.name = "out_channels", .kind = ParamKind::integer, .default_value = nullptr, .help = "C_out", .minimum = 1},
      padding_param(),
      padding_mode_param("other modes: pad first, then decompose"),
      stride_param(),
      dilation_param(),
      bias_param(),
      dtype_param(),
      seed_param("seed of the input and weights"),
  };
}

ConvCaseParams parse_conv_case(const Case& c) {
  ConvCaseParams p;
  p.image = get_int_pair(c.params, "image");
  p.kernel = get_int_pair(c.params, "kernel");
  p.in_channels = std::size_t(get_int(c.params, "in_channels"));
  p.out_channels = std::size_t(get_int(c.params, "out_channels"));
  p.geometry = case_geometry(c);
  p.bias = c.params.at("bias").get<bool>();
  p.dtype = case_dtype(c);
  p.seed = case_seed(c);
  check_geometry(p.geometry, p.image, p.kernel, "kernel");
  check_tensor_names(c, {"input", "conv_weight", "conv_bias"});
  if (c.weights.contains("conv_bias") && !p.bias)
    throw ParamError("bias", "weights.conv_bias is given but \"bias\" is false");
  return p;
}

TensorShapes conv_case_tensor_shapes(const ConvCaseParams& p) {
  TensorShapes out{{"input", {p.in_channels, std::size_t(p.image[0]), std::size_t(p.image[1])}},
                   {"conv_weight", {p.out_channels, p.in_channels, std::size_t(p.kernel[0]), std::size_t(p.kernel[1])}}};
  if (p.bias) out["conv_bias"] = {p.out_channels};
  return out;
}

template <class T> ConvCase<T> conv_case_tensors(const Case& c, const ConvCaseParams& p) {
  const CaseTensors tensors(c, p.seed);
  ConvCase<T> conv;
  conv.input = tensors.get<T, 3>("input", {p.in_channels, std::size_t(p.image[0]), std::size_t(p.image[1])});
  conv.weight = tensors.get<T, 4>("conv_weight",
                                  {p.out_channels, p.in_channels, std::size_t(p.kernel[0]), std::size_t(p.kernel[1])});
  conv.bias = tensors.conv_bias<T>(p.bias, p.out_channels);
  conv.geometry = p.geometry;
  return conv;
}

template <class T> std::vector<NamedTensor> conv_case_dump(const ConvCase<T>& conv) {
  return {{"input", xt::xarray<T>(conv.input)},
          {"conv_weight", xt::xarray<T>(conv.weight)},
          {"conv_bias", xt::xarray<T>(conv.bias ? *conv.bias : Vector<T>(xt::zeros<T>({conv.weight.shape(0)})))}};
}

template ConvCase<float> conv_case_tensors(const Case&, const ConvCaseParams&);
template ConvCase<double> conv_case_tensors(const Case&, const ConvCaseParams&);
template std::vector<NamedTensor> conv_case_dump(const ConvCase<float>&);
template std::vector<NamedTensor> conv_case_dump(const ConvCase<double>&);

}  // namespace attnconv
