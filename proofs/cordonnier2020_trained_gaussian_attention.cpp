// Cordonnier, Loukas & Jaggi, "On the Relationship between Self-Attention and
// Convolutional Layers", ICLR 2020, Section 4, asked of a trained Gaussian
// layer (issue 23): how convolutional is this layer of quadratic-encoding heads
// on the tokens it received? The layer is epfml/attention-cnn's
// GaussianSelfAttention, loaded by its state_dict names (attention_centers,
// attention_spreads — 2 x 2 per head, or one scalar per head for the isotropic
// variant —, value.weight, value.bias) and run on the recorded tokens with its
// softmax over the keys of the image (construction/trained_gaussian.hpp); its
// output must reproduce the module's own (reference_output). Its attention then
// gives the kernels K_q(δ) = Σ_h P_h(q, q+δ) M_h and their nearest K1 x K2
// convolutions (trained_common.hpp).
#include "construction/trained_gaussian.hpp"
#include "io/errors.hpp"
#include "proof/proof_spec.hpp"
#include "trained_common.hpp"

namespace attnconv {
namespace {

struct GaussianParams {
  std::size_t hidden_size = 0, heads = 0;
  std::array<int, 2> grid{};
  bool isotropic = false;  // attention_isotropic_gaussian: attention_spreads (N_h)
  NearestKernel kernel;  // "kernel" and "kernel_mass"
  Dtype dtype = Dtype::float64;
  std::uint64_t seed = 0;
};

std::size_t tokens_of(const GaussianParams& p) { return std::size_t(p.grid[0]) * std::size_t(p.grid[1]); }

std::vector<std::size_t> spreads_shape(const GaussianParams& p) {
  if (p.isotropic) return {p.heads};
  return {p.heads, 2, 2};
}

void check(GaussianParams& p, const Case&, const Request&) {
  check_nearest_kernel(p.kernel, p.grid);
}

TensorShapes expected_tensors(const GaussianParams& p) {
  const std::size_t c = p.hidden_size, t = tokens_of(p);
  return {{"input", {t, c}},
          {"reference_output", {t, c}},
          {"attention_centers", {p.heads, 2}},
          {"attention_spreads", spreads_shape(p)},
          {"value.weight", {c, p.heads * c}},
          {"value.bias", {c}}};
}

// The module as Gaussian heads: Δ_h = attention_centers[h], A_h = ½ S_h S_hᵀ
// (isotropic: ½ s_h² I), W_val^h = I, W_out = value.weightᵀ, b_out = value.bias.
template <class T> GaussianAttention<T> load_layer(const Case& c, const GaussianParams& p) {
  const CaseTensors tensors(c, p.seed);
  const std::size_t heads = p.heads, d = p.hidden_size;
  GaussianAttention<T> layer;
  layer.centers = xt::cast<double>(tensors.get<T, 2>("attention_centers", {heads, 2}));
  layer.precisions = xt::zeros<double>({heads, std::size_t(2), std::size_t(2)});
  if (p.isotropic) {
    const Vector<T> s = tensors.get<T, 1>("attention_spreads", {heads});
    for (std::size_t h = 0; h < heads; ++h)
      layer.precisions(h, 0, 0) = layer.precisions(h, 1, 1) = 0.5 * double(s(h)) * double(s(h));
  } else {
    const xt::xtensor<T, 3> s = tensors.get<T, 3>("attention_spreads", {heads, 2, 2});
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t k = 0; k < 2; ++k)
          layer.precisions(h, i, k) =
              0.5 * (double(s(h, i, 0)) * double(s(h, k, 0)) + double(s(h, i, 1)) * double(s(h, k, 1)));
  }
  layer.w_val = xt::zeros<T>({heads, d, d});
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < d; ++i) layer.w_val(h, i, i) = T(1);
  layer.w_out = xt::transpose(tensors.get<T, 2>("value.weight", {d, heads * d}));
  layer.b_out = tensors.get<T, 1>("value.bias", {d});
  return layer;
}

template <class T> TrainedCase<T> trained_case(const Case& c, const GaussianParams& p) {
  const GaussianAttention<T> layer = load_layer<T>(c, p);
  xt::xtensor<T, 3> x = trained_input<T>(c, p.seed, tokens_of(p), p.hidden_size);
  TrainedLayer<T> measured{.forward = gaussian_grid_forward(layer, x, p.grid[0], p.grid[1]),
                           .head_maps = gaussian_head_maps(layer),
                           .bias = xt::cast<double>(layer.b_out),
                           .family = "Gaussian self-attention layer"};
  return {std::move(x), std::move(measured), {.extra = 0, .h = p.grid[0], .w = p.grid[1]}};
}

template <class T> Outcome verify(const Case& c, const GaussianParams& p) {
  const TrainedCase<T> r = trained_case<T>(c, p);
  return trained_outcome(c, p.dtype, r.x, r.layer, r.grid, p.kernel);
}

std::vector<FigureData> figures(const Case& c, const GaussianParams& p, const json& /*metrics*/) {
  return with_dtype(p.dtype, [&](auto tag) {
    const auto r = trained_case<decltype(tag)>(c, p);
    return trained_figures(c, r.x, r.layer, r.grid, p.kernel);
  });
}

double memory_estimate(const Case& c, const GaussianParams& p) {
  const double d = double(p.hidden_size), t = double(tokens_of(p));
  return trained_memory(c, t, d, double(p.heads), t, largest_kernel(p.kernel, p.grid)) +
         8 * double(p.heads) * d * d * 3;  // W_val = I, W_out and the head maps
}

using P = GaussianParams;
const bool registered = register_proof(make_proof<P>({
    .id = "cordonnier2020.trained_gaussian_attention",
    .paper = "Cordonnier, Loukas & Jaggi, On the Relationship between Self-Attention and Convolutional Layers, ICLR "
             "2020 (Section 4, learned quadratic encoding; epfml/attention-cnn GaussianSelfAttention); issue 23",
    .statement = "Measures how convolutional a trained Gaussian self-attention layer (epfml/attention-cnn "
                 "GaussianSelfAttention: attention_centers, attention_spreads, value.weight, value.bias by their "
                 "state_dict names) is on the tokens it received. 'holds' means: the layer loaded reproduces the "
                 "module's own output (reference_rel_l2, 1e-10 in float64), and on the grid y_q = sum_delta "
                 "K_q(delta) x_{q+delta} + b to round-off (identity_rel_l2), with K_q(delta) = sum_h P_h(q, "
                 "q+delta) value.weight[:, h C:(h+1) C] and P_h(q, k) = softmax_k(-(k - q - Delta_h)^T S_h S_h^T "
                 "(k - q - Delta_h) / 2) over the image's keys; the distances to its nearest K1 x K2 convolutions "
                 "(lstsq_rel_l2, rel_l2), the translation-invariance defect, the attention outside the window and "
                 "the per-head mean attention distances, taps and leaks are findings, judged only when the case sets a "
                 "tolerance.",
    .params = {field(&P::hidden_size,
                     size_param("hidden_size", "C, the token width (value.weight is (C, N_h C))", 65536)),
               field(&P::heads, size_param("heads", "N_h, num_attention_heads", 4096)),
               field(&P::grid, {.name = "grid",
                                .help = "the token grid [H, W]: the module's input (N, H, W, C), H its first "
                                        "spatial axis (epfml names it w), the centres' first coordinate",
                                .minimum = 1}),
               field(&P::isotropic, {.name = "isotropic",
                                     .help = "attention_isotropic_gaussian: attention_spreads is one inverse "
                                             "standard deviation per head (N_h), else S_h (N_h, 2, 2)",
                                     .default_value = false}),
               nearest_kernel_fields(&P::kernel),
               field(&P::dtype, dtype_param()),
               field(&P::seed, seed_param("seed of the tensors the case does not load"))},
    .tensors = {"input", "reference_output", "attention_centers", "attention_spreads", "value.weight", "value.bias"},
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
