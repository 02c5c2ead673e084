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
#include <sstream>

#include <xtensor/xview.hpp>

#include "construction/trained_attention.hpp"
#include "io/errors.hpp"
#include "proof/case_tensors.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"
#include "proof/short_number.hpp"

namespace attnconv {
namespace metric {
namespace {
const Metric lstsq_max_abs{.name = "lstsq_max_abs",
                           .help = "max_abs of the layer's output on grid tokens against its least-squares K1 x K2 "
                                   "convolution's (a finding)",
                           .error = true};
const Metric lstsq_rel_l2{.name = "lstsq_rel_l2",
                          .help = "rel_l2 of the layer's output on grid tokens against its least-squares K1 x K2 "
                                  "convolution's, over the batch (a finding)",
                          .error = true};
const Metric identity_max_abs{.name = "identity_max_abs",
                              .help = "max_abs of the layer's output on grid tokens against sum_delta K_q(delta) "
                                      "x_{q+delta} + sum_e K_q(e) x_e + b, the identity the kernels are read from",
                              .error = true};
const Metric identity_rel_l2{.name = "identity_rel_l2",
                             .help = "rel_l2 of the same (round-off: the kernels describe the layer)",
                             .error = true};
const Metric translation_defect{
    .name = "translation_defect",
    .help = "how much K_q varies over the grid queries: sqrt(sum_{n,q,k} ||K_q(k-q) - mean K(k-q)||_F^2 / sum "
            "||K_q(k-q)||_F^2), the mean over the queries with k on the grid, every offset (0: a convolution's)",
    .error = true};
const Metric mass_outside{.name = "mass_outside",
                          .help = "attention on grid keys outside the K1 x K2 window, averaged over grid queries, "
                                  "samples and heads",
                          .error = true};
const Metric mass_extra{.name = "mass_extra",
                        .help = "attention on the extra (class) tokens, averaged over grid queries, samples and heads",
                        .error = true};
const Metric head_mass_outside{.name = "head_mass_outside", .type = MetricType::array,
                               .help = "per head: its attention on grid keys outside the window (mean over grid "
                                       "queries and samples)"};
const Metric head_mass_extra{.name = "head_mass_extra", .type = MetricType::array,
                             .help = "per head: its attention on the extra tokens (mean over grid queries and samples)"};
const Metric mean_attention_distance{
    .name = "mean_attention_distance", .type = MetricType::array,
    .help = "per head: sum_{k in grid} P(q,k) ||k - q||_2 / sum_{k in grid} P(q,k) in grid steps, averaged over grid "
            "queries and samples (Dosovitskiy et al., 2021, Fig. 7, in patches)"};
const Metric equations{.name = "lstsq_equations", .type = MetricType::integer,
                       .help = "equations of the least squares per output channel: N * H * W"};
const Metric unknowns{.name = "lstsq_unknowns", .type = MetricType::integer,
                      .help = "unknowns per output channel: D_in * K1 * K2 + 1"};
const Metric rank{.name = "lstsq_rank", .type = MetricType::integer, .help = "rank of the least-squares matrix"};
const Metric underdetermined{.name = "lstsq_underdetermined", .type = MetricType::boolean,
                             .help = "fewer equations than unknowns, or a rank below the unknowns: the least-squares "
                                     "convolution is the minimum-norm one of many that fit as well"};
const Metric samples{.name = "samples", .type = MetricType::integer, .help = "N, the samples measured together"};
}  // namespace
}  // namespace metric

namespace {

struct TrainedParams {
  std::size_t embed_dim = 0, heads = 0, extra_tokens = 0;
  std::array<int, 2> grid{};
  std::array<int, 2> kernel{3, 3};
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
  if (p.kernel[0] > p.grid[0] || p.kernel[1] > p.grid[1])
    throw ParamError("kernel", "the " + std::to_string(p.kernel[0]) + "x" + std::to_string(p.kernel[1]) +
                                   " window must fit the " + std::to_string(p.grid[0]) + "x" +
                                   std::to_string(p.grid[1]) + " grid");
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

json as_array(const std::vector<double>& v) { return json(v); }

template <class T> Outcome verify(const Case& c, const TrainedParams& p) {
  const TorchAttention<T> layer = load_layer<T>(c, p);
  const std::size_t t = tokens_of(p), d = p.embed_dim;
  xt::xtensor<T, 3> x;
  if (has_case_tensor(c, "input")) x = xt::xtensor<T, 3>(load_case_batch<T>(c, "input", {t, d}));
  else x = xt::xtensor<T, 3>(xt::reshape_view(CaseTensors(c, p.seed).get<T, 2>("input", {t, d}), {std::size_t(1), t, d}));
  const AttentionForward<T> forward = torch_attention_forward(layer, x);
  const TokenGrid grid{.extra = p.extra_tokens, .h = p.grid[0], .w = p.grid[1]};
  const xt::xtensor<double, 3> xd = xt::cast<double>(x), yd = xt::cast<double>(forward.y);
  const ConvolutionalMeasure m =
      measure_convolutional(xd, yd, forward.p, head_maps(layer), folded_bias(layer), grid, p.kernel);

  Outcome out;
  const Difference white = compare(m.y_white, m.y_grid);  // relative to the layer's output
  set_distance(out, white);
  const Difference lstsq = compare(m.y_lstsq, m.y_grid);
  out.set(metric::lstsq_max_abs, lstsq.max_abs);
  out.set(metric::lstsq_rel_l2, lstsq.rel_l2);
  out.set(metric::identity_max_abs, m.identity_max_abs);
  out.set(metric::identity_rel_l2, m.identity_rel_l2);
  out.set(metric::translation_defect, m.defect);
  out.set(metric::mass_outside, m.mass_outside_all);
  out.set(metric::mass_extra, m.mass_extra_all);
  out.set(metric::head_mass_outside, as_array(m.mass_outside));
  out.set(metric::head_mass_extra, as_array(m.mass_extra));
  out.set(metric::mean_attention_distance, as_array(m.mean_distance));
  out.set(metric::equations, m.equations);
  out.set(metric::unknowns, m.unknowns);
  out.set(metric::rank, m.rank);
  const bool under = m.equations < m.unknowns || m.rank < m.unknowns;
  out.set(metric::underdetermined, under);
  out.set(metric::samples, x.shape(0));
  // The claim judged by default: the kernels are read from an identity that holds to round-off.
  // (The module's own output is compared by the runner: reference_rel_l2.)
  out.default_tolerance = {{metric::identity_rel_l2.name, p.dtype == Dtype::float32 ? 1e-4 : 1e-10}};

  std::ostringstream msg;
  const std::string k = std::to_string(p.kernel[0]) + "x" + std::to_string(p.kernel[1]);
  msg << "measured on " << x.shape(0) << (x.shape(0) == 1 ? " sample" : " samples") << " of " << grid.h << "x"
      << grid.w << " grid tokens (+" << p.extra_tokens << " extra): the layer is " << short_number(lstsq.rel_l2)
      << " (rel_l2) from its least-squares " << k << " convolution on this input, " << short_number(white.rel_l2)
      << " from its white-input one; translation-invariance defect " << short_number(m.defect) << "; attention outside the window "
      << short_number(m.mass_outside_all) << ", on extra tokens " << short_number(m.mass_extra_all)
      << "; mean attention distance per head [";
  for (std::size_t h = 0; h < m.mean_distance.size(); ++h) msg << (h ? ", " : "") << short_number(m.mean_distance[h]);
  msg << "] grid steps. These distances are findings, not pass/fail, unless the case sets a tolerance on them";
  if (under)
    msg << ". The least squares is underdetermined (" << m.equations << " equations, " << m.unknowns
        << " unknowns per output channel, rank " << m.rank << "): its convolution is the minimum-norm one of many";
  out.message = msg.str();

  const auto grid_tokens = [&](const xt::xtensor<double, 3>& a) { return xt::xarray<T>(xt::cast<T>(a)); };
  // Input and output as the file gives them: (N, T, D) for a batch, (T, D) without one.
  const auto as_given = [&](const xt::xtensor<T, 3>& a) {
    return c.batch > 0 ? xt::xarray<T>(a) : xt::xarray<T>(xt::view(a, 0));
  };
  out.tensors = {{"input", as_given(x)},
                 {"actual", as_given(forward.y)},
                 {"lstsq_conv_weight", xt::xarray<T>(xt::cast<T>(m.lstsq_weight))},
                 {"lstsq_conv_bias", xt::xarray<T>(xt::cast<T>(m.lstsq_bias))},
                 {"conv_weight", xt::xarray<T>(xt::cast<T>(m.white_weight))},
                 {"conv_bias", xt::xarray<T>(xt::cast<T>(m.white_bias))},
                 {"lstsq_expected", grid_tokens(m.y_lstsq)},
                 {"expected", grid_tokens(m.y_white)},
                 {"attention", xt::xarray<T>(xt::cast<T>(forward.p))}};
  out.reference_tensor = "actual";
  return out;
}

double memory_estimate(const TrainedParams& p) {
  const double t = double(tokens_of(p)), d = double(p.embed_dim), g = double(p.grid[0]) * double(p.grid[1]);
  const double columns = d * p.kernel[0] * p.kernel[1] + 1;
  // One sample (the batch is not known here): tokens, attention, the least-squares matrix twice.
  return 8 * (4 * t * d + double(p.heads) * t * t + 2 * g * columns + 3 * d * d + 4 * g * d);
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
                 "per-head mean attention distances are findings, judged only when the case sets a tolerance.",
    .params = {field(&P::embed_dim, size_param("embed_dim", "D, the token width (in_proj_weight is (3D, D))", 65536)),
               field(&P::heads, size_param("heads", "N_h (D divisible by it)", 4096)),
               field(&P::grid, {.name = "grid", .help = "the token grid [H, W] (row-major after the extra tokens)",
                                .minimum = 1}),
               field(&P::extra_tokens, {.name = "extra_tokens",
                                        .help = "tokens before the grid (ViT's class token: 1)",
                                        .default_value = 0,
                                        .minimum = 0,
                                        .maximum = 4096}),
               field(&P::kernel, {.name = "kernel",
                                  .help = "the window [K1, K2] of the nearest convolutions",
                                  .default_value = std::array<int, 2>{3, 3},
                                  .minimum = 1}),
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
    .metrics = distance_metrics(
        "the layer's output on grid tokens against its white-input K1 x K2 convolution's, over the batch (a finding)",
        {metric::lstsq_max_abs, metric::lstsq_rel_l2, metric::identity_max_abs, metric::identity_rel_l2,
         metric::translation_defect, metric::mass_outside, metric::mass_extra, metric::head_mass_outside,
         metric::head_mass_extra, metric::mean_attention_distance, metric::equations, metric::unknowns, metric::rank,
         metric::underdetermined, metric::samples}),
    .dumps = {{"input", "(N, T, D), or (T, D) for an input without a batch: the tokens"},
              {"actual", "(N, T, D) or (T, D): the layer's output (the proof's, compared with reference_output)"},
              {"lstsq_conv_weight", "(D_out, D_in, K1, K2): the least-squares convolution on this input, loadable "
                                    "into torch.nn.Conv2d(padding='same')"},
              {"lstsq_conv_bias", "(D_out)"},
              {"conv_weight", "(D_out, D_in, K1, K2): the white-input convolution, loadable into "
                              "torch.nn.Conv2d(padding='same')"},
              {"conv_bias", "(D_out): W_out b_val + b_out"},
              {"lstsq_expected", "(N, H*W, D_out): the least-squares convolution's output on the grid tokens"},
              {"expected", "(N, H*W, D_out): the white-input convolution's output on the grid tokens"},
              {"attention", "(N, N_h, T, T): the layer's attention probabilities"}},
    .memory_estimate = memory_estimate,
    .expected_tensors = expected_tensors,
    .whole_batch = true,
}));

}  // namespace
}  // namespace attnconv
