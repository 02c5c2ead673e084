#pragma once
// The convolution of a decomposition case (acmix2022.conv_decomposition,
// acmix2022.shift_as_depthwise): its parameters, checks and tensors, drawn from
// the seed (streams "input", "conv_weight", "conv_bias", as for Theorem 1) or
// loaded from .npy files under the same keys.
#include <optional>

#include "harness/proof.hpp"
#include "ops/conv2d_blocked.hpp"

namespace attnconv {

std::vector<ParamSpec> conv_case_params();
ConvGeometry conv_case_geometry(const Case& c);
void validate_conv_case(const Case& c);  // throws ParamError
// The tensors a case may load from .npy: input, conv_weight, conv_bias (with bias).
std::map<std::string, std::vector<std::size_t>> conv_case_tensor_shapes(const Case& c);

template <class T> struct ConvCase {
  Image<T> input;
  Kernel<T> weight;
  std::optional<Vector<T>> bias;
  ConvGeometry geometry;
};

template <class T> ConvCase<T> conv_case_tensors(const Case& c);

// input, conv_weight, conv_bias (zeros without bias), for the tensor dump.
template <class T> std::vector<NamedTensor> conv_case_dump(const ConvCase<T>& conv);

}  // namespace attnconv
