#pragma once
// An ACmix case (acmix2022.module, acmix2022.cost_table): parameters, parsed
// and checked once, and the input and parameters, drawn from the seed or
// loaded from .npy files named by the reference state_dict keys ("weights": {"conv1.weight": ...}).
#include "acmix/acmix_module.hpp"
#include "acmix/random_weights.hpp"
#include "proof/proof.hpp"
#include "proof/dtype.hpp"

namespace attnconv {

struct AcmixParams {
  AcmixConfig config;
  AcmixInit init;
  std::array<int, 2> image{};
  Dtype dtype = Dtype::float64;
  std::uint64_t seed = 0;
};

// The parameters both ACmix proofs begin with: image, in_channels,
// out_channels, heads, kernel_att, kernel_conv, stride.
std::vector<ParamSpec> acmix_case_params(int kernel_att_default, std::string kernel_conv_help, ParamSpec stride);

// Parses and checks a case: out_channels divisible by heads, odd kernels,
// reflection padding smaller than the image, known weight keys. Throws
// ParamError (or InputError for weights).
AcmixParams parse_acmix_case(const Case& c);
// The tensors a case may load from .npy: input and the state_dict entries.
TensorShapes acmix_case_tensor_shapes(const AcmixParams& p);

// What the loaded tensors say of the parameters: "rates" [rate1, rate2] when
// either is loaded, "dep_init": "loaded" when dep_conv.weight is.
json acmix_loaded_params(const Case& c, const AcmixParams& p);

template <class T> struct AcmixCase {
  AcmixConfig config;
  Image<T> input;
  AcmixWeights<T> weights;
  std::vector<std::string> loaded;  // state_dict keys read from files
};

template <class T> AcmixCase<T> acmix_case_tensors(const Case& c, const AcmixParams& p);

}  // namespace attnconv
