#pragma once
// An ACmix case (acmix2022.module, acmix2022.cost_table): configuration,
// checks, and the input and parameters, drawn from the seed or loaded from .npy
// files named by the reference state_dict keys ("weights": {"conv1.weight": ...}).
#include "acmix/acmix_module.hpp"
#include "acmix/random_weights.hpp"
#include "harness/proof.hpp"

namespace attnconv {

AcmixConfig acmix_case_config(const Case& c);
AcmixInit acmix_case_init(const Case& c);
// out_channels divisible by heads, odd kernels, reflection padding smaller than
// the image, known weight keys. Throws ParamError (or InputError for weights).
void validate_acmix_case(const Case& c);
// The tensors a case may load from .npy: input and the state_dict entries.
std::map<std::string, std::vector<std::size_t>> acmix_case_tensor_shapes(const Case& c);

template <class T> struct AcmixCase {
  AcmixConfig config;
  Image<T> input;
  AcmixWeights<T> weights;
  std::vector<std::string> loaded;  // state_dict keys read from files
};

template <class T> AcmixCase<T> acmix_case_tensors(const Case& c);

}  // namespace attnconv
