#pragma once
// An ACmix case (acmix2022.module, acmix2022.cost_table): parameters, parsed
// and checked once, and the input and parameters, drawn from the seed or
// loaded from .npy files named by the reference state_dict keys ("weights": {"conv1.weight": ...}).
#include "acmix/acmix_module.hpp"
#include "acmix/random_weights.hpp"
#include "proof/proof.hpp"
#include "proof/dtype.hpp"
#include "proof/field.hpp"

namespace attnconv {

struct AcmixParams {
  AcmixConfig config;
  AcmixInit init;
  std::array<int, 2> image{};
  Dtype dtype = Dtype::float64;
  std::uint64_t seed = 0;
};

// The parameters every ACmix proof begins with: image, in_channels,
// out_channels, heads, kernel_att, kernel_conv, stride.
struct AcmixParamOptions {
  int kernel_att_default = 7;
  std::string kernel_conv_help;
  std::string stride_help = "";
};
std::vector<Field<AcmixParams>> acmix_case_params(AcmixParamOptions options);
// "projection_bias": conv1..3 biases (false: zero).
Field<AcmixParams> projection_bias_param();
// The tensors a case may name: input, reference_output and the state_dict's.
// (The names depend on no parameter the loader has not checked by then.)
std::vector<std::string> acmix_case_tensor_names();

// Checks a case: out_channels divisible by heads, odd kernels, reflection
// padding smaller than the image, the biases its weights give. Throws
// ParamError.
void check_acmix_case(AcmixParams& p, const Case& c, const Request& request);
// The tensors a case may load from .npy: input and the state_dict entries.
TensorShapes acmix_case_tensor_shapes(const AcmixParams& p);

// Bytes at the peak of an ACmix proof (module, cost_table, window_vs_neighborhood), process_bytes
// (proof/memory.hpp) included: per pixel of the map padded by the larger kernel, the input and its
// copies, Stage I's q, k, v and their scaled and padded copies, the attention path's and the reference
// loops' outputs, the conv path's output, the module's and the dumps' (16 C_out + 2 C_in), the window's
// scores and weights and the loops' per-query weights ((2 + N) k_att^2), the conv path's shifted
// features and the positional encoding (2 d (k_conv^2 + 1), d = C_out / N); the parameters twice.
double acmix_memory(const Case& c, const AcmixParams& p);

// `first`, then the module's state_dict under its reference names (conv1.weight,
// ..., rate2; dep_conv.bias when dep_conv has one).
std::vector<TensorDump> acmix_state_dict_dumps(std::vector<TensorDump> first);

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
