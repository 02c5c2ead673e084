// Cordonnier, Loukas & Jaggi, "On the Relationship between Self-Attention and
// Convolutional Layers", ICLR 2020, asked of a trained layer (issue 23): how
// convolutional is this multi-head self-attention layer on the tokens it
// received? The layer is loaded by its PyTorch state_dict names
// (nn.MultiheadAttention as torchvision's VisionTransformer uses it, or timm's
// Attention) and run on the recorded tokens; its output must reproduce the
// module's own (reference_output). From its attention probabilities on this
// input, the locally connected kernel K_q(δ) = Σ_h P_h(q, q+δ) (W_val^h W_out^h)ᵀ
// of every grid query, and its nearest K1 x K2 convolutions: least squares on
// this input and for white input (src/construction/trained_attention.hpp).
// This proof measures: the distances to the convolutions are findings, judged
// only when a case sets a tolerance on them.
#include "io/errors.hpp"
#include "proof/proof_spec.hpp"
#include "trained_common.hpp"

namespace attnconv {
namespace {

struct TrainedParams {
  std::size_t embed_dim = 0, heads = 0, extra_tokens = 0;
  std::array<int, 2> grid{};
  NearestKernel kernel;  // "kernel" and "kernel_mass"
  bool timm = false;  // "layout": "torch" (nn.MultiheadAttention) or "timm" (qkv, proj)
  bool bias = true;
  Dtype dtype = Dtype::float64;
  std::uint64_t seed = 0;
};

// The state_dict names of a layout: qkv weight, qkv bias, projection weight, projection bias.
struct Names {
  std::string w_qkv, b_qkv, w_proj, b_proj;
};
Names names_of(bool timm) {
  if (timm) return {"qkv.weight", "qkv.bias", "proj.weight", "proj.bias"};
  return {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"};
}

std::size_t tokens_of(const TrainedParams& p) { return p.extra_tokens + std::size_t(p.grid[0]) * std::size_t(p.grid[1]); }

void check(TrainedParams& p, const Case&, const Request&) {
  if (p.embed_dim % p.heads != 0)
    throw ParamError("heads", "embed_dim " + std::to_string(p.embed_dim) + " is not divisible by heads " +
                                  std::to_string(p.heads));
  check_nearest_kernel(p.kernel, p.grid);
}

TensorShapes expected_tensors(const TrainedParams& p) {
  const Names n = names_of(p.timm);
  const std::size_t d = p.embed_dim, t = tokens_of(p);
  TensorShapes out{{"input", {t, d}}, {"reference_output", {t, d}}, {n.w_qkv, {3 * d, d}}, {n.w_proj, {d, d}}};
  if (p.bias) out[n.b_qkv] = {3 * d};
  // timm's proj always has a bias; nn.MultiheadAttention's out_proj has one with bias=True.
  if (p.bias || p.timm) out[n.b_proj] = {d};
  return out;
}

template <class T> TorchAttention<T> load_layer(const Case& c, const TrainedParams& p) {
  const CaseTensors tensors(c, p.seed);
  const Names n = names_of(p.timm);
  const std::size_t d = p.embed_dim;
  TorchAttention<T> layer;
  layer.heads = p.heads;
  layer.w_qkv = tensors.get<T, 2>(n.w_qkv.c_str(), {3 * d, d});
  layer.w_proj = tensors.get<T, 2>(n.w_proj.c_str(), {d, d});
  layer.b_qkv = p.bias ? tensors.get<T, 1>(n.b_qkv.c_str(), {3 * d}) : Vector<T>(xt::zeros<T>({3 * d}));
  layer.b_proj = p.bias || p.timm ? tensors.get<T, 1>(n.b_proj.c_str(), {d}) : Vector<T>(xt::zeros<T>({d}));
  return layer;
}

template <class T> TrainedCase<T> trained_case(const Case& c, const TrainedParams& p) {
  const TorchAttention<T> layer = load_layer<T>(c, p);
  xt::xtensor<T, 3> x = trained_input<T>(c, p.seed, tokens_of(p), p.embed_dim);
  TrainedLayer<T> measured{.forward = torch_attention_forward(layer, x),
                           .head_maps = head_maps(layer),
                           .bias = folded_bias(layer),
                           .family = "multi-head self-attention layer"};
  return {std::move(x), std::move(measured), {.extra = p.extra_tokens, .h = p.grid[0], .w = p.grid[1]}};
}

template <class T> Outcome verify(const Case& c, const TrainedParams& p) {
  const TorchAttention<T> layer = load_layer<T>(c, p);
  const TrainedCase<T> r = trained_case<T>(c, p);
  Outcome out = trained_outcome(c, p.dtype, r.x, r.layer, r.grid, p.kernel);
  out.tensors.push_back({"w_qkv", xt::xarray<T>(layer.w_qkv)});
  out.tensors.push_back({"b_qkv", xt::xarray<T>(layer.b_qkv)});
  out.tensors.push_back({"w_proj", xt::xarray<T>(layer.w_proj)});
  out.tensors.push_back({"b_proj", xt::xarray<T>(layer.b_proj)});
  return out;
}

std::vector<FigureData> figures(const Case& c, const TrainedParams& p, const json& /*metrics*/) {
  return with_dtype(p.dtype, [&](auto tag) {
    const auto r = trained_case<decltype(tag)>(c, p);
    return trained_figures(c, r.x, r.layer, r.grid, p.kernel);
  });
}

std::vector<TensorDump> dumps() {
  std::vector<TensorDump> all = trained_dumps();
  all.insert(all.end(), {{"w_qkv", "(3D, D): [W_q; W_k; W_v] in PyTorch's (out, in) layout (in_proj_weight / qkv.weight)"},
                         {"b_qkv", "(3D): in_proj_bias / qkv.bias; zeros without"},
                         {"w_proj", "(D, D): out_proj.weight / proj.weight"},
                         {"b_proj", "(D): out_proj.bias / proj.bias; zeros without"}});
  return all;
}

double memory_estimate(const Case& c, const TrainedParams& p) {
  return trained_memory(c, double(tokens_of(p)), double(p.embed_dim), double(p.heads),
                        double(p.grid[0]) * double(p.grid[1]), largest_kernel(p.kernel, p.grid));
}

using P = TrainedParams;
const bool registered = register_proof(make_proof<P>({
    .id = "cordonnier2020.trained_attention",
    .paper = "Cordonnier, Loukas & Jaggi, On the Relationship between Self-Attention and Convolutional Layers, ICLR "
             "2020 (Section 4, the equivalent kernel, read off a trained layer); issue 23",
    .statement = "Measures how convolutional a trained multi-head self-attention layer (torch nn.MultiheadAttention "
                 "or timm qkv/proj, by its state_dict names) is on the tokens it received. 'holds' means: the "
                 "layer loaded reproduces the module's own output (reference_rel_l2, 1e-10 in float64), and on "
                 "grid tokens y_q = sum_delta K_q(delta) x_{q+delta} + sum_e K_q(e) x_e + b to round-off "
                 "(identity_rel_l2), with K_q(delta) = sum_h P_h(q, q+delta) (W_val^h W_out^h)^T from its "
                 "attention on this input; the distances to its nearest K1 x K2 convolutions (lstsq_rel_l2: least "
                 "squares on this input; rel_l2: white input, the mean of K_q over queries on the window), the "
                 "translation-invariance defect, the attention outside the window and on extra tokens, and the "
                 "per-head mean attention distances, taps and leaks are findings, judged only when the case sets a "
                 "tolerance.",
    .params = {field(&P::embed_dim, size_param("embed_dim", "D, the token width (in_proj_weight is (3D, D))", 65536)),
               field(&P::heads, size_param("heads", "N_h (D divisible by it)", 4096)),
               field(&P::grid, {.name = "grid", .help = "the token grid [H, W] (row-major after the extra tokens)",
                                .minimum = 1}),
               field(&P::extra_tokens, {.name = "extra_tokens",
                                        .help = "tokens before the grid (ViT's class token: 1)",
                                        .default_value = 0,
                                        .minimum = 0,
                                        .maximum = 4096}),
               nearest_kernel_fields(&P::kernel),
               field(&P::timm, {.name = "layout",
                                .help = "the state_dict names: \"torch\" (nn.MultiheadAttention: in_proj_weight, "
                                        "in_proj_bias, out_proj.weight, out_proj.bias) or \"timm\" (qkv.weight, "
                                        "qkv.bias, proj.weight, proj.bias)",
                                .default_value = false,
                                .named = {{"torch", false}, {"timm", true}}}),
               field(&P::bias, {.name = "bias",
                                .help = "the layer has its input-projection bias (torch: and out_proj.bias; timm's "
                                        "proj.bias is always loaded)",
                                .default_value = true}),
               field(&P::dtype, dtype_param()),
               field(&P::seed, seed_param("seed of the tensors the case does not load"))},
    .tensors = {"input", "reference_output", "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias",
                "qkv.weight", "qkv.bias", "proj.weight", "proj.bias"},
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = trained_metrics(),
    .dumps = dumps(),
    .memory_estimate = memory_estimate,
    .expected_tensors = expected_tensors,
    .figures = figures,
    .figures_per_case = true,
    .whole_batch = true,
}));

}  // namespace
}  // namespace attnconv
