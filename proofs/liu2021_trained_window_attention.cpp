// Liu et al., "Swin Transformer: Hierarchical Vision Transformer using Shifted
// Windows", ICCV 2021, asked of a trained layer (issue 23): how convolutional
// is this window-attention layer on the tokens it received? The layer is loaded
// by its PyTorch state_dict names (qkv, proj, relative_position_bias_table of
// torchvision's ShiftedWindowAttention or microsoft/Swin-Transformer's
// WindowAttention) with its block's window and shift, and run on the recorded
// grid tokens as both codes compute it (src/construction/trained_window_attention.hpp:
// padding, torchvision's shift rule, the cyclic shift, the -100 mask); its output
// must reproduce the module's own (reference_output). Its attention between
// grid tokens then goes to the measurement every trained-attention proof shares
// (proofs/trained_common.hpp); the padded tokens' share of b_v is in the folded bias.
#include "construction/trained_window_attention.hpp"
#include "io/errors.hpp"
#include "proof/proof_spec.hpp"
#include "proof/short_number.hpp"
#include "trained_common.hpp"

namespace attnconv {

namespace metric {
namespace {
const Metric mass_padding{.name = "mass_padding",
                          .help = "attention on the zero tokens padding the grid to a multiple of the window, "
                                  "averaged over grid queries, samples and heads (their values are b_v: folded into "
                                  "the bias)",
                          .error = true};
const Metric head_mass_padding{.name = "head_mass_padding", .type = MetricType::array,
                               .help = "per head: its attention on the padding (mean over grid queries and samples)"};
const Metric effective_shift{.name = "effective_shift", .type = MetricType::array,
                             .help = "the shift [s1, s2] applied: the module's, 0 on an axis where the window covers "
                                     "the padded grid (torchvision's rule)"};
}  // namespace
}  // namespace metric

namespace {

struct SwinTrainedParams {
  std::size_t embed_dim = 0, heads = 0;
  std::array<int, 2> grid{}, window{}, shift{};
  NearestKernel kernel;  // "kernel" and "kernel_mass"
  bool qkv_bias = true, proj_bias = true;
  Dtype dtype = Dtype::float64;
  std::uint64_t seed = 0;
};

std::size_t tokens_of(const SwinTrainedParams& p) { return std::size_t(p.grid[0]) * std::size_t(p.grid[1]); }
std::size_t table_rows(const SwinTrainedParams& p) { return std::size_t((2 * p.window[0] - 1) * (2 * p.window[1] - 1)); }

void check(SwinTrainedParams& p, const Case&, const Request&) {
  if (p.embed_dim % p.heads != 0)
    throw ParamError("heads", "embed_dim " + std::to_string(p.embed_dim) + " is not divisible by heads " +
                                  std::to_string(p.heads));
  for (std::size_t a = 0; a < 2; ++a)
    if (p.shift[a] >= p.window[a])
      throw ParamError("shift", "the shift " + std::to_string(p.shift[a]) + " must be below the window " +
                                    std::to_string(p.window[a]) + " on axis " + std::to_string(a));
  check_nearest_kernel(p.kernel, p.grid);
}

TensorShapes expected_tensors(const SwinTrainedParams& p) {
  const std::size_t d = p.embed_dim, t = tokens_of(p);
  TensorShapes out{{"input", {t, d}},
                   {"reference_output", {t, d}},
                   {"qkv.weight", {3 * d, d}},
                   {"proj.weight", {d, d}},
                   {"relative_position_bias_table", {table_rows(p), p.heads}}};
  if (p.qkv_bias) out["qkv.bias"] = {3 * d};
  if (p.proj_bias) out["proj.bias"] = {d};
  return out;
}

template <class T> SwinWindowLayer<T> load_layer(const Case& c, const SwinTrainedParams& p) {
  const CaseTensors tensors(c, p.seed);
  const std::size_t d = p.embed_dim;
  SwinWindowLayer<T> layer;
  layer.attention.heads = p.heads;
  layer.attention.w_qkv = tensors.get<T, 2>("qkv.weight", {3 * d, d});
  layer.attention.w_proj = tensors.get<T, 2>("proj.weight", {d, d});
  layer.attention.b_qkv = p.qkv_bias ? tensors.get<T, 1>("qkv.bias", {3 * d}) : Vector<T>(xt::zeros<T>({3 * d}));
  layer.attention.b_proj = p.proj_bias ? tensors.get<T, 1>("proj.bias", {d}) : Vector<T>(xt::zeros<T>({d}));
  layer.table = tensors.get<T, 2>("relative_position_bias_table", {table_rows(p), p.heads});
  layer.window = p.window;
  layer.shift = p.shift;
  return layer;
}

template <class T> TrainedCase<T> trained_case(const Case& c, const SwinTrainedParams& p) {
  const SwinWindowLayer<T> layer = load_layer<T>(c, p);
  xt::xtensor<T, 3> x = trained_input<T>(c, p.seed, tokens_of(p), p.embed_dim);
  TrainedLayer<T> measured{.forward = swin_window_forward(layer, x, p.grid),
                           .head_maps = head_maps(layer.attention),
                           .bias = folded_bias(layer.attention),
                           .family = "Swin window-attention layer"};
  return {std::move(x), std::move(measured), {.extra = 0, .h = p.grid[0], .w = p.grid[1]}};
}

template <class T> Outcome verify(const Case& c, const SwinTrainedParams& p) {
  const TrainedCase<T> r = trained_case<T>(c, p);
  const TrainedLayer<T>& measured = r.layer;
  Outcome out = trained_outcome(c, p.dtype, r.x, measured, r.grid, p.kernel);

  // The attention each grid query gives the padding: what its row of P (grid keys only) misses of 1.
  const xt::xtensor<double, 4>& attention = measured.forward.p;
  const std::size_t n_samples = attention.shape(0), heads = attention.shape(1), t = attention.shape(2);
  std::vector<double> padding(heads, 0.0);
  double all = 0;
  for (std::size_t h = 0; h < heads; ++h) {
    for (std::size_t n = 0; n < n_samples; ++n)
      for (std::size_t q = 0; q < t; ++q) {
        double on_grid = 0;
        for (std::size_t k = 0; k < t; ++k) on_grid += attention(n, h, q, k);
        padding[h] += 1 - on_grid;
      }
    padding[h] /= double(n_samples * t);
    all += padding[h] / double(heads);
  }
  const WindowGeometry g = window_geometry(p.grid, p.window, p.shift);
  out.set(metric::mass_padding, all);
  out.set(metric::head_mass_padding, json(padding));
  out.set(metric::effective_shift, json(std::vector<int>{g.shift[0], g.shift[1]}));
  out.message += "; windows " + std::to_string(p.window[0]) + "x" + std::to_string(p.window[1]) + ", shift [" +
                 std::to_string(g.shift[0]) + ", " + std::to_string(g.shift[1]) + "] on the grid padded to " +
                 std::to_string(g.padded[0]) + "x" + std::to_string(g.padded[1]) + " (attention on the padding " +
                 short_number(all) + ")";
  return out;
}

std::vector<FigureData> figures(const Case& c, const SwinTrainedParams& p, const json& /*metrics*/) {
  return with_dtype(p.dtype, [&](auto tag) {
    const auto r = trained_case<decltype(tag)>(c, p);
    return trained_figures(c, r.x, r.layer, r.grid, p.kernel);
  });
}

// The shared dumps, with the attention as this proof gives it: between grid tokens only.
std::vector<TensorDump> dumps() {
  std::vector<TensorDump> all = trained_dumps();
  for (TensorDump& d : all)
    if (d.name == "attention")
      d.meaning = "(N, N_h, H*W, H*W): the attention between grid tokens (zero outside a query's window; a row sums "
                  "to 1 minus its attention on the padding)";
  return all;
}

double memory_estimate(const Case& c, const SwinTrainedParams& p) {
  const double t = double(tokens_of(p));
  return trained_memory(c, t, double(p.embed_dim), double(p.heads), t, largest_kernel(p.kernel, p.grid));
}

using P = SwinTrainedParams;
const bool registered = register_proof(make_proof<P>({
    .id = "liu2021.trained_window_attention",
    .paper = "Liu et al., Swin Transformer: Hierarchical Vision Transformer using Shifted Windows, ICCV 2021 (its "
             "window attention as torchvision's ShiftedWindowAttention and microsoft/Swin-Transformer's "
             "WindowAttention compute it); Cordonnier, Loukas & Jaggi, ICLR 2020 (the equivalent kernel, read off a "
             "trained layer); issue 23",
    .statement = "Measures how convolutional a trained Swin window-attention layer (qkv, proj, "
                 "relative_position_bias_table by their state_dict names, with its block's window and shift) is on "
                 "the grid tokens it received. 'holds' means: the layer loaded reproduces the module's own output "
                 "(reference_rel_l2, 1e-10 in float64; grid padded with zero tokens to a multiple of the window, "
                 "shift 0 on an axis the window covers, cyclic shift by -s, Swin's -100 mask), and on grid tokens "
                 "y_q = sum_delta K_q(delta) x_{q+delta} + b to round-off (identity_rel_l2), K_q(delta) = sum_h "
                 "P_h(q, q+delta) (W_val^h W_out^h)^T from its attention on this input, b = W_out b_val + b_out "
                 "(the padded tokens' values are b_val); the distances to its nearest K1 x K2 convolutions "
                 "(lstsq_rel_l2, rel_l2), the translation-invariance defect, the attention outside the K1 x K2 "
                 "window and on the padding, and the per-head mean attention distances, taps and leaks are "
                 "findings, judged only "
                 "when the case sets a tolerance.",
    .params = {field(&P::embed_dim, size_param("embed_dim", "D, the token width (qkv.weight is (3D, D))", 65536)),
               field(&P::heads, size_param("heads", "N_h (D divisible by it)", 4096)),
               field(&P::grid, {.name = "grid", .help = "the token grid [H, W] (tokens row-major)", .minimum = 1}),
               field(&P::window, {.name = "window",
                                  .help = "Swin's window [M1, M2] (relative_position_bias_table is "
                                          "((2 M1 - 1)(2 M2 - 1), N_h))",
                                  .minimum = 1,
                                  .maximum = 1024}),
               field(&P::shift, {.name = "shift",
                                 .help = "the module's shift [s1, s2] (torchvision's shift_size; microsoft's "
                                         "shift_size on both axes), below the window; set to 0 on an axis where "
                                         "the window covers the padded grid",
                                 .default_value = std::array<int, 2>{0, 0},
                                 .minimum = 0}),
               nearest_kernel_fields(&P::kernel),
               field(&P::qkv_bias, {.name = "qkv_bias", .help = "the layer has qkv.bias", .default_value = true}),
               field(&P::proj_bias, {.name = "proj_bias", .help = "the layer has proj.bias", .default_value = true}),
               field(&P::dtype, dtype_param()),
               field(&P::seed, seed_param("seed of the tensors the case does not load"))},
    .tensors = {"input", "reference_output", "qkv.weight", "qkv.bias", "proj.weight", "proj.bias",
                "relative_position_bias_table"},
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = trained_metrics({metric::mass_padding, metric::head_mass_padding, metric::effective_shift}),
    .dumps = dumps(),
    .memory_estimate = memory_estimate,
    .expected_tensors = expected_tensors,
    .figures = figures,
    .figures_per_case = true,
    .whole_batch = true,
}));

}  // namespace
}  // namespace attnconv
