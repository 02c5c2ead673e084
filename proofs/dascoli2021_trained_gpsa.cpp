// d'Ascoli, Touvron, Leavitt, Morcos, Biroli & Sagun, "ConViT: Improving Vision
// Transformers with Soft Convolutional Inductive Biases", ICML 2021, asked of a
// trained layer (issue 23): how convolutional did this gated positional
// self-attention layer become, on the patch tokens it received? The layer is
// loaded by the state_dict names of facebookresearch/convit's GPSA (timm's
// ConViT keeps them) in PyTorch's (out, in) layout, run by Eq. 5 with its
// trained pos_proj and gates (construction/trained_gpsa.hpp), must reproduce
// the module's own output (reference_output), and is then measured as every
// trained attention layer is (trained_common.hpp), with σ(λ_h) per head.
#include "construction/trained_gpsa.hpp"
#include "io/errors.hpp"
#include "proof/proof_spec.hpp"
#include "trained_common.hpp"

namespace attnconv {
namespace metric {
namespace {
const Metric head_sigma{.name = "head_sigma",
                        .type = MetricType::array,
                        .help = "per head: sigma(lambda_h) of gating_param, the weight of the positional softmax "
                                "(1: purely positional, 0: purely content)"};
}  // namespace
}  // namespace metric

namespace {

struct GpsaParams {
  std::size_t embed_dim = 0, heads = 0;
  std::array<int, 2> grid{};
  NearestKernel kernel;  // "kernel" and "kernel_mass"
  bool qkv_bias = false;
  Dtype dtype = Dtype::float64;
  std::uint64_t seed = 0;
};

std::size_t tokens_of(const GpsaParams& p) { return std::size_t(p.grid[0]) * std::size_t(p.grid[1]); }

void check(GpsaParams& p, const Case&, const Request&) {
  if (p.embed_dim % p.heads != 0)
    throw ParamError("heads", "embed_dim " + std::to_string(p.embed_dim) + " is not divisible by heads " +
                                  std::to_string(p.heads));
  // ConViT's GPSA builds its rel_indices from sqrt(N) patches (get_rel_indices): only a square grid is its layer.
  if (p.grid[0] != p.grid[1])
    throw ParamError("grid", "ConViT's GPSA runs on a square grid of patches only (its rel_indices are built from "
                             "sqrt(N)); got " + std::to_string(p.grid[0]) + "x" + std::to_string(p.grid[1]));
  check_nearest_kernel(p.kernel, p.grid);
}

TensorShapes expected_tensors(const GpsaParams& p) {
  const std::size_t d = p.embed_dim, t = tokens_of(p), h = p.heads;
  TensorShapes out{{"input", {t, d}},          {"reference_output", {t, d}}, {"qk.weight", {2 * d, d}},
                   {"v.weight", {d, d}},       {"proj.weight", {d, d}},      {"proj.bias", {d}},
                   {"pos_proj.weight", {h, 3}}, {"pos_proj.bias", {h}},      {"gating_param", {h}}};
  if (p.qkv_bias) {
    out["qk.bias"] = {2 * d};
    out["v.bias"] = {d};
  }
  return out;
}

template <class T> TorchGpsa<T> load_layer(const Case& c, const GpsaParams& p) {
  const CaseTensors tensors(c, p.seed);
  const std::size_t d = p.embed_dim, h = p.heads;
  const auto bias = [&](const char* key, std::size_t size) {
    return p.qkv_bias ? tensors.get<T, 1>(key, {size}) : Vector<T>(xt::zeros<T>({size}));
  };
  return {.heads = h,
          .w_qk = tensors.get<T, 2>("qk.weight", {2 * d, d}),
          .b_qk = bias("qk.bias", 2 * d),
          .w_v = tensors.get<T, 2>("v.weight", {d, d}),
          .b_v = bias("v.bias", d),
          .w_proj = tensors.get<T, 2>("proj.weight", {d, d}),
          .b_proj = tensors.get<T, 1>("proj.bias", {d}),
          .w_pos = tensors.get<T, 2>("pos_proj.weight", {h, 3}),
          .b_pos = tensors.get<T, 1>("pos_proj.bias", {h}),
          .gating = tensors.get<T, 1>("gating_param", {h})};
}

template <class T> TrainedCase<T> trained_case(const Case& c, const GpsaParams& p) {
  const TorchGpsa<T> layer = load_layer<T>(c, p);
  xt::xtensor<T, 3> x = trained_input<T>(c, p.seed, tokens_of(p), p.embed_dim);
  TrainedLayer<T> measured{.forward = gpsa_torch_forward(layer, x, p.grid[0], p.grid[1]),
                           .head_maps = head_maps(layer),
                           .bias = folded_bias(layer),
                           .family = "GPSA layer"};
  return {std::move(x), std::move(measured), {.extra = 0, .h = p.grid[0], .w = p.grid[1]}};
}

template <class T> Outcome verify(const Case& c, const GpsaParams& p) {
  const TrainedCase<T> r = trained_case<T>(c, p);
  Outcome out = trained_outcome(c, p.dtype, r.x, r.layer, r.grid, p.kernel);
  out.set(metric::head_sigma, json(gate_sigmas(load_layer<T>(c, p))));
  return out;
}

std::vector<FigureData> figures(const Case& c, const GpsaParams& p, const json& /*metrics*/) {
  return with_dtype(p.dtype, [&](auto tag) {
    const auto r = trained_case<decltype(tag)>(c, p);
    return trained_figures(c, r.x, r.layer, r.grid, p.kernel);
  });
}

double memory_estimate(const Case& c, const GpsaParams& p) {
  const double t = double(tokens_of(p)), samples = double(std::max<std::size_t>(1, c.batch));
  // The measurement's, and the positional softmax of every head (N_h T^2) per sample.
  return trained_memory(c, t, double(p.embed_dim), double(p.heads), t, largest_kernel(p.kernel, p.grid)) +
         8 * samples * double(p.heads) * t * t;
}

using P = GpsaParams;
const bool registered = register_proof(make_proof<P>({
    .id = "dascoli2021.trained_gpsa",
    .paper = "d'Ascoli, Touvron, Leavitt, Morcos, Biroli & Sagun, ConViT: Improving Vision Transformers with Soft "
             "Convolutional Inductive Biases, ICML 2021, Eq. 5 (facebookresearch/convit, class GPSA); measured as "
             "Cordonnier et al., ICLR 2020, Section 4, for trained layers; issue 23",
    .statement = "Measures how convolutional a trained ConViT GPSA layer (qk, v, proj, pos_proj, gating_param by "
                 "their state_dict names, PyTorch's (out, in) layout) is on the patch tokens it received (a square "
                 "grid, no class token). 'holds' means: the layer loaded reproduces the module's own output "
                 "(reference_rel_l2, 1e-10 in float64), and y_q = sum_delta K_q(delta) x_{q+delta} + b to "
                 "round-off (identity_rel_l2), with K_q(delta) = sum_h A_h(q, q+delta) W_o^h W_v^h from its gated, "
                 "renormalised attention A_h = (1 - sigma(lambda_h)) softmax(content) + sigma(lambda_h) "
                 "softmax(pos) on this input; the distances to its nearest K1 x K2 convolutions (lstsq_rel_l2, "
                 "rel_l2), the translation-invariance defect, the attention outside the window, the per-head mean "
                 "attention distances, taps, leaks and gates sigma(lambda_h) are findings, judged only when the case "
                 "sets a tolerance.",
    .params = {field(&P::embed_dim, size_param("embed_dim", "D, the token width (qk.weight is (2D, D))", 65536)),
               field(&P::heads, size_param("heads", "N_h (D divisible by it; pos_proj.weight is (N_h, 3))", 4096)),
               field(&P::grid, {.name = "grid",
                                .help = "the square grid [H, W] of patch tokens (row-major; H = W: ConViT builds "
                                        "rel_indices from sqrt(N))",
                                .minimum = 1}),
               nearest_kernel_fields(&P::kernel),
               field(&P::qkv_bias, {.name = "qkv_bias",
                                    .help = "ConViT's qkv_bias: the layer has qk.bias and v.bias (ConViT's default: "
                                            "false)",
                                    .default_value = false}),
               field(&P::dtype, dtype_param()),
               field(&P::seed, seed_param("seed of the tensors the case does not load"))},
    .tensors = {"input", "reference_output", "qk.weight", "qk.bias", "v.weight", "v.bias", "proj.weight", "proj.bias",
                "pos_proj.weight", "pos_proj.bias", "gating_param"},
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = trained_metrics({metric::head_sigma}),
    .dumps = trained_dumps(),
    .memory_estimate = memory_estimate,
    .expected_tensors = expected_tensors,
    .figures = figures,
    .figures_per_case = true,
    .whole_batch = true,
}));

}  // namespace
}  // namespace attnconv
