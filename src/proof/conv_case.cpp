#include "proof/conv_case.hpp"

#include "io/errors.hpp"
#include "proof/npy.hpp"
#include "proof/case_tensors.hpp"
#include "proof/common_params.hpp"
#include "proof/dtype.hpp"
#include "proof/memory.hpp"

namespace attnconv {

TensorShapes conv_case_tensor_shapes(const ConvCaseParams& p) {
  const auto x = p.shape.input();
  const auto w = p.shape.weight();
  TensorShapes out{{"input", {x.begin(), x.end()}}, {"conv_weight", {w.begin(), w.end()}}};
  if (p.bias) out["conv_bias"] = {p.shape.out_channels};
  out["reference_output"] = conv_output_shape(p.shape, p.geometry);
  return out;
}

double conv_case_memory_estimate(const Case&, const ConvCaseParams& p) {
  const double s = double(dtype_bytes(p.dtype));
  const Padding& pad = p.geometry.padding;
  const double padded = double(p.shape.image[0] + pad.top + pad.bottom) * double(p.shape.image[1] + pad.left + pad.right);
  const auto y = conv_output_shape(p.shape, p.geometry);
  const double out = double(y[1]) * double(y[2]);
  const double c_in = double(p.shape.in_channels), c_out = double(p.shape.out_channels);
  const double weight = c_out * c_in / p.shape.groups * p.shape.kernel[0] * p.shape.kernel[1];
  return process_bytes + s * (3 * c_in * padded + 2 * c_out * padded + 6 * c_out * out + 2 * weight);
}

template <class T> ConvCase<T> conv_case_tensors(const Case& c, const ConvCaseParams& p) {
  const CaseTensors tensors(c, p.seed);
  ConvCase<T> conv;
  conv.input = tensors.get<T, 3>("input", p.shape.input());
  conv.weight = tensors.get<T, 4>("conv_weight", p.shape.weight());
  conv.bias = tensors.conv_bias<T>(p.bias, p.shape.out_channels);
  conv.geometry = p.geometry;
  return conv;
}

template <class T> std::vector<NamedTensor> conv_case_dump(const ConvCase<T>& conv) {
  if (!DumpedTensors::wanted()) return {};
  return {{"input", xt::xarray<T>(conv.input)},
          {"conv_weight", xt::xarray<T>(conv.weight)},
          {"conv_bias", xt::xarray<T>(conv.bias ? *conv.bias : Vector<T>(xt::zeros<T>({conv.weight.shape(0)})))}};
}

ProofSpec<ConvCaseParams> conv_case_proof(ProofSpec<ConvCaseParams> spec) {
  using P = ConvCaseParams;
  spec.params = {nested(&P::shape, conv_shape()),
                 nested(&P::geometry, conv_geometry({.padding_mode_help = "other modes: pad first, then decompose"})),
                 field(&P::bias, bias_param()),
                 field(&P::dtype, dtype_param()),
                 field(&P::seed, seed_param("seed of the input and weights"))};
  spec.tensors = {"input", "conv_weight", "conv_bias", "reference_output"};
  spec.check = [](P& p, const Case& c, const Request&) {
    if (c.weights.contains("conv_bias") && !p.bias)
      throw ParamError("bias", "weights.conv_bias is given but \"bias\" is false");
  };
  spec.memory_estimate = conv_case_memory_estimate;
  spec.expected_tensors = conv_case_tensor_shapes;
  return spec;
}

template ConvCase<float> conv_case_tensors(const Case&, const ConvCaseParams&);
template ConvCase<double> conv_case_tensors(const Case&, const ConvCaseParams&);
template std::vector<NamedTensor> conv_case_dump(const ConvCase<float>&);
template std::vector<NamedTensor> conv_case_dump(const ConvCase<double>&);

}  // namespace attnconv
