#pragma once
// What the Theorem 1 proofs (2D, 1D, padding remark) share: their last
// parameters, the hypotheses, and the metrics of a construction run (error,
// finite-alpha bound, alpha_min, the converse's distances).
#include <optional>
#include <string>
#include <vector>

#include "construction/theorem1_check.hpp"
#include "mhsa/engine.hpp"
#include "proof/conv_geometry.hpp"
#include "io/errors.hpp"
#include "proof/proof.hpp"
#include "proof/common_params.hpp"
#include "proof/dtype.hpp"
#include "proof/field.hpp"

namespace attnconv {

// The paper, as each Theorem 1 proof cites it, followed by the part it checks.
inline std::string cordonnier2020(const std::string& part) {
  return "Cordonnier, Loukas & Jaggi, On the Relationship between Self-Attention and Convolutional Layers, ICLR "
         "2020, " + part;
}

// The parameters every Theorem 1 proof ends with.
struct Theorem1Shared {
  bool bias = true;
  double alpha = 0;
  std::uint64_t seed = 0;
};
// "bias", "alpha", "seed".
Field<Theorem1Shared> theorem1_shared();

// The tensors a Theorem 1 case may load (input, conv_weight, conv_bias, reference_output).
std::vector<std::string> theorem1_tensor_names();

// A 2D Theorem 1 case (theorem1, absolute_encoding): its sizes, geometry,
// construction options (heads, head_dim, alpha, dilation; the encoding left
// quadratic) and shared parameters.
struct Theorem1Case2d {
  ConvShape shape;
  ConvGeometry geometry;
  Theorem1Options options;
  Theorem1Shared shared;
  Dtype dtype = Dtype::float64;
};
// Its parameters: the convolution's shape and geometry, heads, head_dim, the
// shared ones and dtype.
struct Theorem1ParamOptions {
  ConvShapeOptions shape = {.kernel_maximum = 4096, .in_help = "D_in", .out_help = "D_out"};
  std::optional<double> dilation_maximum = 4096;
  std::string head_dim_help = "D_h (>= min(in_channels, out_channels) for an exact construction)";
};
std::vector<Field<Theorem1Case2d>> theorem1_2d_params(Theorem1ParamOptions options = {});
// The options the construction takes from the shared parameters and the
// geometry (alpha, dilation), and Theorem 1's hypotheses (check_hypotheses).
void check_theorem1_2d(Theorem1Case2d& p, const Case& c, const Request& request);
// The tensors such a case may load instead of drawing them from the seed.
TensorShapes theorem1_2d_tensors(const Theorem1Case2d& p);

// Bytes at the peak of one check_theorem1 with `engine` (dense or separable),
// process_bytes (proof/memory.hpp) included: the larger of (during the MHSA)
// the inputs, the convolution, the padded image, its tokens and the engine
// (mhsa/engine.hpp engine_memory_bytes), and (at the end) those plus the MHSA
// output as tokens and image, the aligned output, the bound's float64 copies
// of the tokens and its products, and the copies handed to the report.
double theorem1_memory(const ConvShape& shape, const ConvGeometry& g, const Theorem1Options& options, Dtype dtype,
                       Engine engine);

// What construction_outcome reports.
namespace metric {
inline const Metric alpha{.name = "alpha", .help = "the attention sharpness used"};
inline const Metric engine{.name = "engine", .type = MetricType::string, .help = "the MHSA engine that ran"};
inline const Metric encoding{.name = "encoding", .type = MetricType::string, .help = "the relative positional encoding"};
inline const Metric lambda_min{.name = "lambda_min",
                               .help = "smallest eigenvalue of the per-head precision A (1 for the quadratic encoding)"};
inline const Metric bound{
    .name = "bound", .help = "finite-alpha bound on max_abs: eps(alpha) * sum_h 2 max_k |X_k W_val^h W_out^h| + round-off"};
inline const Metric attention_leak{.name = "attention_leak",
                                   .help = "eps(alpha) = 4 s (1 + s), s = sum_{n>=1} exp(-alpha lambda_min n^2)"};
inline const Metric roundoff_allowance{
    .name = "roundoff_allowance", .help = "the round-off part of the bound: max_abs within it is the convolution to round-off"};
inline const Metric weight_distance{
    .name = "weight_distance",
    .help = "Frobenius distance of the construction's alpha -> infinity kernel (W_val^h W_out^h per position) to the "
            "convolution's, positions without a head counted in full",
    .error = true};
inline const Metric alpha_min{
    .name = "alpha_min",
    .help = "with a max_abs or rel_l2 tolerance: the smallest alpha whose bound meets it (null: none up to 4096)",
    .always = false};
inline const Metric eckart_young{
    .name = "eckart_young",
    .help = "head_dim < min(in_channels, out_channels): the best weight_distance any W_val, W_out can reach",
    .always = false};
inline const Metric failure_floor{
    .name = "failure_floor",
    .help = "the converse: the least weight_distance predicted (eckart_young, or 0 with too few heads: any positive "
            "distance)",
    .always = false};
inline const Metric bound_note{.name = "bound_note", .type = MetricType::string,
                               .help = "the converse: what the bound is about", .always = false};
}  // namespace metric

// The metrics construction_outcome reports, then a proof's `own`.
std::vector<Metric> theorem1_metrics(std::vector<Metric> own);

// With "expect": "hold", Theorem 1's hypotheses: heads >= kernel positions,
// head_dim >= needed_head_dim. Throws ParamError.
void check_hypotheses(const Request& request, int kernel_positions, const Theorem1Options& options, int in_channels,
                      int out_channels);

// sqrt(sum over kernel positions of |W_val^h W_out^h - W[:, :, p, q]^T|_F^2), the
// positions without a head counting in full: how far the kernel the layer
// expresses as alpha -> infinity is from the convolution's.
// `slices` are the weight's M_h = W[:, :, p, q]^T (Theorem1Check::slices).
template <class T> double weight_distance(const MhsaLayer<T>& layer, const std::vector<Matrix<T>>& slices, int heads);

// Metrics of one construction run: max_abs, rel_l2, alpha, engine, bound (and
// its parts), weight_distance, alpha_min when the case gives a tolerance, and
// for the converse (too few heads, head_dim < needed_head_dim) eckart_young,
// failure_floor and a plain-words message. The default tolerance is
// {"max_abs": bound}, the round-off one {"max_abs": roundoff_allowance}; the
// converse's predicted failure is weight_distance >= failure_floor.
template <class T>
Outcome construction_outcome(const Request& request, const Theorem1Check<T>& check, const Theorem1Options& options,
                             const std::string& engine);

// A layer's per-head weights for --dump-tensors: w_val (N_h, D_in, D_h),
// w_out (N_h D_h, D_out), b_out (D_out) (Eq. 8: MHSA(X) = concat_h(SA_h(X)) W_out + b_out);
// none outside a dump (DumpedTensors, proof/proof.hpp), as for mhsa_layer_tensors.
template <class T> std::vector<NamedTensor> head_weight_tensors(const MhsaLayer<T>& layer);

// The whole layer of Eq. 8 (mhsa/mhsa_layer.hpp) for --dump-tensors: w_qry,
// w_key (N_h, D_in, D_k), w_key_hat (N_h, D_k, D_p), u, v (N_h, D_k), then
// head_weight_tensors; and their declarations after `more`, `encoding` saying
// which r_delta the layer uses.
template <class T> std::vector<NamedTensor> mhsa_layer_tensors(const MhsaLayer<T>& layer);
std::vector<TensorDump> mhsa_layer_dumps(const std::string& encoding, std::vector<TensorDump> more = {});

}  // namespace attnconv
