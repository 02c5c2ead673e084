// Hassani, Walton, Li, Li & Shi, "Neighborhood Attention Transformer", CVPR
// 2023, asked of a trained layer (issue 23): how convolutional is this
// neighbourhood-attention layer on the tokens it received? The layer is NATTEN
// 0.17's NeighborhoodAttention2D, loaded by its state_dict names (qkv, rpb,
// proj; PyTorch's (out, in) layout) with its kernel_size and dilation, and run
// on the recorded tokens (src/local/trained_neighborhood.hpp: NATTEN's clamped,
// dilated windows and rpb indexing); its output must reproduce the module's own
// (reference_output). Its attention P over the whole grid (zero outside each
// query's neighbourhood) then gives the kernels K_q(δ) = Σ_h P_h(q, q+δ) M_h,
// M_h = W_o^h W_v^h, and their nearest K1 x K2 convolutions (trained_common.hpp).
#include "construction/trained_attention.hpp"
#include "io/errors.hpp"
#include "local/trained_neighborhood.hpp"
#include "proof/proof_spec.hpp"
#include "trained_common.hpp"

#include <cmath>

namespace attnconv {
namespace {

struct NatParams {
  std::size_t embed_dim = 0, heads = 0;
  std::array<int, 2> grid{};
  int kernel_size = 7, dilation = 1;  // NATTEN's, equal on both axes
  bool rel_pos_bias = true, qkv_bias = true;
  double qk_scale = 0;  // 0: head_dim^-1/2
  NearestKernel kernel;  // "kernel" and "kernel_mass"
  Dtype dtype = Dtype::float64;
  std::uint64_t seed = 0;
};

std::size_t tokens_of(const NatParams& p) { return std::size_t(p.grid[0]) * std::size_t(p.grid[1]); }
std::size_t table_of(const NatParams& p) { return std::size_t(2 * p.kernel_size - 1); }

void check(NatParams& p, const Case&, const Request&) {
  if (p.embed_dim % p.heads != 0)
    throw ParamError("heads", "embed_dim " + std::to_string(p.embed_dim) + " is not divisible by heads " +
                                  std::to_string(p.heads));
  if (p.kernel_size % 2 == 0)
    throw ParamError("kernel_size", "NATTEN 0.17's neighbourhoods are odd, got " + std::to_string(p.kernel_size));
  const int span = p.kernel_size * p.dilation;
  if (span > p.grid[0] || span > p.grid[1])
    throw ParamError("dilation", "kernel_size * dilation = " + std::to_string(span) + " must fit the " +
                                     std::to_string(p.grid[0]) + "x" + std::to_string(p.grid[1]) +
                                     " grid (NATTEN's requirement)");
  check_nearest_kernel(p.kernel, p.grid);
}

TensorShapes expected_tensors(const NatParams& p) {
  const std::size_t d = p.embed_dim, t = tokens_of(p), table = table_of(p);
  TensorShapes out{{"input", {t, d}},       {"reference_output", {t, d}}, {"qkv.weight", {3 * d, d}},
                   {"proj.weight", {d, d}}, {"proj.bias", {d}}};
  if (p.qkv_bias) out["qkv.bias"] = {3 * d};
  if (p.rel_pos_bias) out["rpb"] = {p.heads, table, table};
  return out;
}

template <class T> TrainedNeighborhood<T> load_layer(const Case& c, const NatParams& p) {
  const CaseTensors tensors(c, p.seed);
  const std::size_t d = p.embed_dim, table = table_of(p);
  TrainedNeighborhood<T> layer;
  layer.heads = p.heads;
  layer.kernel = p.kernel_size;
  layer.dilation = p.dilation;
  layer.scale = p.qk_scale != 0 ? p.qk_scale : 1.0 / std::sqrt(double(d / p.heads));
  layer.w_qkv = tensors.get<T, 2>("qkv.weight", {3 * d, d});
  layer.b_qkv = p.qkv_bias ? tensors.get<T, 1>("qkv.bias", {3 * d}) : Vector<T>(xt::zeros<T>({3 * d}));
  layer.rpb = p.rel_pos_bias ? tensors.get<T, 3>("rpb", {p.heads, table, table})
                             : xt::xtensor<T, 3>(xt::zeros<T>({p.heads, table, table}));
  layer.w_proj = tensors.get<T, 2>("proj.weight", {d, d});
  layer.b_proj = tensors.get<T, 1>("proj.bias", {d});
  return layer;
}

template <class T> TrainedCase<T> trained_case(const Case& c, const NatParams& p) {
  const TrainedNeighborhood<T> nat = load_layer<T>(c, p);
  xt::xtensor<T, 3> x = trained_input<T>(c, p.seed, tokens_of(p), p.embed_dim);
  NeighborhoodForward<T> forward = trained_neighborhood_forward(nat, x, p.grid[0], p.grid[1]);
  // qkv and proj are laid out as timm's Attention: M_h = W_o^h W_v^h and b = W_o b_v + b_o as there.
  const TorchAttention<T> maps{.heads = p.heads, .w_qkv = nat.w_qkv, .b_qkv = nat.b_qkv, .w_proj = nat.w_proj,
                               .b_proj = nat.b_proj};
  TrainedLayer<T> measured{.forward = {.y = std::move(forward.y), .p = std::move(forward.p)},
                                 .head_maps = head_maps(maps),
                                 .bias = folded_bias(maps),
                                 .family = "neighbourhood-attention layer (" + std::to_string(p.kernel_size) + "x" +
                                           std::to_string(p.kernel_size) + ", dilation " +
                                           std::to_string(p.dilation) + ")"};
  return {std::move(x), std::move(measured), {.extra = 0, .h = p.grid[0], .w = p.grid[1]}};
}

template <class T> Outcome verify(const Case& c, const NatParams& p) {
  const TrainedCase<T> r = trained_case<T>(c, p);
  return trained_outcome(c, p.dtype, r.x, r.layer, r.grid, p.kernel);
}

std::vector<FigureData> figures(const Case& c, const NatParams& p, const json& /*metrics*/) {
  return with_dtype(p.dtype, [&](auto tag) {
    const auto r = trained_case<decltype(tag)>(c, p);
    return trained_figures(c, r.x, r.layer, r.grid, p.kernel);
  });
}

double memory_estimate(const Case& c, const NatParams& p) {
  const double t = double(tokens_of(p));
  return trained_memory(c, t, double(p.embed_dim), double(p.heads), t, largest_kernel(p.kernel, p.grid));
}

using P = NatParams;
const bool registered = register_proof(make_proof<P>({
    .id = "hassani2023.trained_neighborhood_attention",
    .paper = "Hassani, Walton, Li, Li & Shi, Neighborhood Attention Transformer, CVPR 2023 (Eq. 2-3, NATTEN 0.17's "
             "NeighborhoodAttention2D), measured as Cordonnier et al., ICLR 2020, Section 4; issue 23",
    .statement = "Measures how convolutional a trained neighbourhood-attention layer (NATTEN 0.17 "
                 "NeighborhoodAttention2D: qkv, rpb, proj by their state_dict names; kernel_size, dilation) is on "
                 "the tokens it received. 'holds' means: the layer loaded reproduces the module's own output "
                 "(reference_rel_l2, 1e-10 in float64), and on the grid y_q = sum_delta K_q(delta) x_{q+delta} + b "
                 "to round-off (identity_rel_l2), with K_q(delta) = sum_h P_h(q, q+delta) W_o^h W_v^h from its "
                 "attention on this input (zero outside each query's clamped neighbourhood); the distances to its "
                 "nearest K1 x K2 convolutions (lstsq_rel_l2, rel_l2), the translation-invariance defect, the "
                 "attention outside the window and the per-head mean attention distances, taps and leaks are "
                 "findings, judged only "
                 "when the case sets a tolerance.",
    .params = {field(&P::embed_dim, size_param("embed_dim", "D, the token width (qkv.weight is (3D, D))", 65536)),
               field(&P::heads, size_param("heads", "N_h (D divisible by it)", 4096)),
               field(&P::grid, {.name = "grid", .help = "the token grid [H, W] (the module's input is (N, H, W, D))",
                                .minimum = 1}),
               field(&P::kernel_size, {.name = "kernel_size",
                                       .help = "NATTEN's neighbourhood K (odd), on both axes",
                                       .default_value = 7,
                                       .minimum = 1,
                                       .maximum = 4095}),
               field(&P::dilation, {.name = "dilation",
                                    .help = "NATTEN's dilation, on both axes (kernel_size * dilation must fit the grid)",
                                    .default_value = 1,
                                    .minimum = 1,
                                    .maximum = 4096}),
               field(&P::rel_pos_bias, {.name = "rel_pos_bias",
                                        .help = "the layer has rpb (N_h, 2K - 1, 2K - 1) (NATTEN 0.17: "
                                                "rel_pos_bias=True; older NATTEN always had it)",
                                        .default_value = true}),
               field(&P::qkv_bias, {.name = "qkv_bias", .help = "the layer has qkv.bias", .default_value = true}),
               field(&P::qk_scale, {.name = "qk_scale",
                                    .help = "the factor on q before the dot product; 0: head_dim^-1/2 (NATTEN's "
                                            "default)",
                                    .default_value = 0.0,
                                    .minimum = 0}),
               nearest_kernel_fields(&P::kernel),
               field(&P::dtype, dtype_param()),
               field(&P::seed, seed_param("seed of the tensors the case does not load"))},
    .tensors = {"input", "reference_output", "qkv.weight", "qkv.bias", "rpb", "proj.weight", "proj.bias"},
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = trained_metrics(),
    .dumps = trained_dumps(),
    .memory_estimate = memory_estimate,
    .expected_tensors = expected_tensors,
    .figures = figures,
    .figures_per_case = true,
    .whole_batch = true,
}));

}  // namespace
}  // namespace attnconv
