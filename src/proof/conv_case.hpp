#pragma once
// A convolution case (acmix2022.conv_decomposition, acmix2022.shift_as_depthwise):
// its parameters, parsed and checked once, and its tensors, drawn from the seed
// (streams "input", "conv_weight", "conv_bias", as for Theorem 1) or loaded
// from .npy files under the same keys.
#include <array>
#include <cstdint>
#include <optional>

#include "proof/proof.hpp"
#include "ops/conv2d_blocked.hpp"
#include "proof/common_params.hpp"
#include "proof/field.hpp"
#include "proof/proof_spec.hpp"

namespace attnconv {

struct ConvCaseParams {
  ConvShape shape;
  ConvGeometry geometry;
  bool bias = true;
  Dtype dtype = Dtype::float64;
  std::uint64_t seed = 0;
};

// A convolution proof: `spec` (its id, paper, statement, verify, metrics) with
// the convolution case's parameters (image, kernel, in_channels,
// out_channels, groups, padding, padding_mode, stride, dilation, bias, dtype,
// seed), tensors (input, conv_weight, conv_bias, reference_output; a loaded
// conv_bias with "bias": false is refused), memory estimate and tensor shapes.
ProofSpec<ConvCaseParams> conv_case_proof(ProofSpec<ConvCaseParams> spec);
// The tensors a case may load from .npy: input, conv_weight, conv_bias (with bias).
TensorShapes conv_case_tensor_shapes(const ConvCaseParams& p);
// Bytes at the peak of a decomposition check (one sample): the input, its
// padded copy and the convolution's, one 1x1 convolution's output on the padded
// grid and its shifted copy, the running sum, the convolution and the dump
// copies, plus 64 MiB for the process. Linear in the pixels, unlike the
// harness's default for attention proofs.
double conv_case_memory_estimate(const Case& c, const ConvCaseParams& p);

template <class T> struct ConvCase {
  Image<T> input;
  Kernel<T> weight;
  std::optional<Vector<T>> bias;
  ConvGeometry geometry;
};

template <class T> ConvCase<T> conv_case_tensors(const Case& c, const ConvCaseParams& p);

// input, conv_weight, conv_bias (zeros without bias), for the tensor dump; none
// outside one (DumpedTensors, proof/proof.hpp).
template <class T> std::vector<NamedTensor> conv_case_dump(const ConvCase<T>& conv);

}  // namespace attnconv
