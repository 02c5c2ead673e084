#pragma once
// What the trained-attention proofs share (issue 23; docs/trained_attention.md):
// every family — ViT's nn.MultiheadAttention and timm's Attention, ConViT's
// GPSA, Swin's windows, NAT's neighbourhoods, Cordonnier's Gaussian heads —
// computes its output and its attention probabilities P (N, N_h, T, T) on the
// tokens it received in its own way, and from then on the measurement is one:
// the locally connected kernel K_q(δ) = Σ_h P_h(q, q+δ) M_h, M_h = W_o^h W_v^h,
// and its nearest K1 x K2 convolutions (construction/trained_attention.hpp).
// A family's proof loads its layer, runs its forward and hands the result here.
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "construction/trained_attention.hpp"
#include "proof/case_tensors.hpp"
#include "proof/common_params.hpp"
#include "proof/field.hpp"
#include "proof/figure.hpp"
#include "proof/proof.hpp"

namespace attnconv {

namespace metric {
// The measurement's metrics (inline: a proof's registration in another file reads them).
inline const Metric lstsq_max_abs{.name = "lstsq_max_abs",
                           .help = "max_abs of the layer's output on grid tokens against its least-squares K1 x K2 "
                                   "convolution's (a finding)",
                           .error = true};
inline const Metric lstsq_rel_l2{.name = "lstsq_rel_l2",
                          .help = "rel_l2 of the layer's output on grid tokens against its least-squares K1 x K2 "
                                  "convolution's, over the batch (a finding)",
                          .error = true};
inline const Metric identity_max_abs{.name = "identity_max_abs",
                              .help = "max_abs of the layer's output on grid tokens against sum_delta K_q(delta) "
                                      "x_{q+delta} + sum_e K_q(e) x_e + b, the identity the kernels are read from",
                              .error = true};
inline const Metric identity_rel_l2{.name = "identity_rel_l2",
                             .help = "rel_l2 of the same (round-off: the kernels describe the layer)",
                             .error = true};
inline const Metric translation_defect{
    .name = "translation_defect",
    .help = "how much K_q varies over the grid queries: sqrt(sum_{n,q,k} ||K_q(k-q) - mean K(k-q)||_F^2 / sum "
            "||K_q(k-q)||_F^2), the mean over the queries with k on the grid, every offset (0: a convolution's)",
    .error = true};
inline const Metric mass_outside{.name = "mass_outside",
                          .help = "attention on grid keys outside the K1 x K2 window, averaged over grid queries, "
                                  "samples and heads",
                          .error = true};
inline const Metric mass_extra{.name = "mass_extra",
                        .help = "attention on the extra (class) tokens, averaged over grid queries, samples and heads",
                        .error = true};
inline const Metric head_mass_outside{.name = "head_mass_outside", .type = MetricType::array,
                               .help = "per head: its attention on grid keys outside the window (mean over grid "
                                       "queries and samples)"};
inline const Metric head_mass_extra{.name = "head_mass_extra", .type = MetricType::array,
                             .help = "per head: its attention on the extra tokens (mean over grid queries and samples)"};
inline const Metric mean_attention_distance{
    .name = "mean_attention_distance", .type = MetricType::array,
    .help = "per head: sum_{k in grid} P(q,k) ||k - q||_2 / sum_{k in grid} P(q,k) in grid steps, averaged over grid "
            "queries and samples (Dosovitskiy et al., 2021, Fig. 7, in patches)"};
inline const Metric mean_offset{
    .name = "mean_offset", .type = MetricType::array,
    .help = "per head: [row, column] of its mean offset, the mean of delta = key - query under its attention over "
            "grid keys (renormalised to them), averaged over grid queries and samples, in grid steps"};
inline const Metric tap{.name = "tap", .type = MetricType::array,
                        .help = "per head: [delta1, delta2], its mean offset rounded to the nearest integer offset "
                                "(halves away from zero)"};
inline const Metric leak{.name = "leak", .type = MetricType::array,
                         .help = "per head: 1 - P_h(q, q + tap), the attention it puts outside its tap, averaged over "
                                 "grid queries and samples (a query whose q + tap is off the grid leaks all of it)"};
inline const Metric kernel_resolved{.name = "kernel_resolved", .type = MetricType::array,
                                    .help = "[K1, K2] of the nearest convolutions: params.kernel, or the window "
                                            "kernel \"auto\" chose"};
inline const Metric kernel_mass_held{
    .name = "kernel_mass_held",
    .help = "the attention on grid keys inside the kernel_resolved window centred on each grid query, averaged over "
            "grid queries, samples and heads (kernel \"auto\" picks the smallest odd K x K with at least kernel_mass)"};
inline const Metric equations{.name = "lstsq_equations", .type = MetricType::integer,
                       .help = "equations of the least squares per output channel: N * H * W"};
inline const Metric unknowns{.name = "lstsq_unknowns", .type = MetricType::integer,
                      .help = "unknowns per output channel: D_in * K1 * K2 + 1"};
inline const Metric rank{.name = "lstsq_rank", .type = MetricType::integer, .help = "rank of the least-squares matrix"};
inline const Metric underdetermined{.name = "lstsq_underdetermined", .type = MetricType::boolean,
                             .help = "fewer equations than unknowns, or a rank below the unknowns: the least-squares "
                                     "convolution is the minimum-norm one of many that fit as well"};
inline const Metric samples{.name = "samples", .type = MetricType::integer, .help = "N, the samples measured together"};
}  // namespace metric


// The tokens a case gives: `input` (N, T, D) for a batch or (T, D) without one
// (then N = 1), or generated from the seed when the case loads none.
template <class T> xt::xtensor<T, 3> trained_input(const Case& c, std::uint64_t seed, std::size_t tokens, std::size_t dim);

// "kernel": the window [K1, K2] of the nearest convolutions (default [3, 3]), or
// "auto": the smallest odd K x K window holding at least "kernel_mass" (default
// 0.9) of the attention on grid keys, averaged over grid queries, samples and
// heads (smallest_odd_window); the largest odd one that fits when none does.
struct NearestKernel {
  AutoPair kernel{std::array<int, 2>{3, 3}};
  double mass = 0.9;
};
FieldOptions<AutoPair> nearest_kernel_param();
FieldOptions<double> kernel_mass_param();
template <class P> Field<P> nearest_kernel_fields(NearestKernel P::*member) {
  return nested(member, group<NearestKernel>({field(&NearestKernel::kernel, nearest_kernel_param()),
                                              field(&NearestKernel::mass, kernel_mass_param())}));
}
// Throws ParamError("kernel") when a given window does not fit the grid [H, W].
void check_nearest_kernel(const NearestKernel& k, std::array<int, 2> grid);
// The window to size memory by: the given one, or the largest odd square that fits for "auto".
std::array<int, 2> largest_kernel(const NearestKernel& k, std::array<int, 2> grid);

// A family's layer as the measurement sees it: its output y (N, T, D_out) and
// attention p from its own forward, its per-head maps M_h (N_h, D_out, D_in)
// and folded bias b (D_out), and the words for its family in the message.
template <class T> struct TrainedLayer {
  AttentionForward<T> forward;
  xt::xtensor<double, 3> head_maps;
  Vector<double> bias;
  std::string family;  // "multi-head self-attention layer", "GPSA layer", ...
};

// A case as its family's proof ran it: the tokens, the layer's forward, the grid.
template <class T> struct TrainedCase {
  xt::xtensor<T, 3> x;
  TrainedLayer<T> layer;
  TokenGrid grid;
};

// The measurement's metrics, outcome, message and dumps (input, actual,
// attention, the two convolutions and their outputs), reference_tensor "actual".
// `extra_metrics` and `note` let a family add its own (GPSA's gates).
template <class T>
Outcome trained_outcome(const Case& c, Dtype dtype, const xt::xtensor<T, 3>& x, const TrainedLayer<T>& layer,
                        const TokenGrid& grid, const NearestKernel& kernel);

// The figures of a trained case (attnconv plot, the HTML page): each head's
// attention over the grid for the centre query (boxed), titled with its tap
// and leak; and |K(delta)|_F per tap of the two nearest convolutions.
template <class T>
std::vector<FigureData> trained_figures(const Case& c, const xt::xtensor<T, 3>& x, const TrainedLayer<T>& layer,
                                        const TokenGrid& grid, const NearestKernel& kernel);


// Every metric trained_outcome sets, after distance_metrics' pair; a family appends its own.
std::vector<Metric> trained_metrics(std::vector<Metric> more = {});
// The dumps trained_outcome writes.
std::vector<TensorDump> trained_dumps();

// Bytes the measurement allocates for the case's samples (Case::batch, else
// 1) of `tokens` tokens of width `dim` (D_in = D_out) with `heads` heads on a
// grid of `grid` tokens and a K1 x K2 window: tokens, attention, the
// least-squares matrix, the kernels, plus process_bytes (proof/memory.hpp).
double trained_memory(const Case& c, double tokens, double dim, double heads, double grid, std::array<int, 2> kernel);

}  // namespace attnconv
