#pragma once
// What the Theorem 1 proofs (2D, 1D, padding remark) share: their last
// parameters, the hypotheses, and the metrics of a construction run (error,
// finite-alpha bound, alpha_min, the converse's distances).
#include <optional>
#include <string>
#include <vector>

#include "construction/theorem1_check.hpp"
#include "proof/conv_geometry.hpp"
#include "io/errors.hpp"
#include "proof/proof.hpp"
#include "proof/common_params.hpp"
#include "proof/dtype.hpp"

namespace attnconv {

// The paper, as each Theorem 1 proof cites it, followed by the part it checks.
inline std::string cordonnier2020(const std::string& part) {
  return "Cordonnier, Loukas & Jaggi, On the Relationship between Self-Attention and Convolutional Layers, ICLR "
         "2020, " + part;
}

// The parameters every Theorem 1 proof ends with, parsed.
struct Theorem1Shared {
  bool bias = true;
  double alpha = 0;
  Dtype dtype = Dtype::float64;
  std::uint64_t seed = 0;
  std::string engine;  // as the case names it
};

// A Theorem 1 proof's parameters: its own, then those every one of them ends
// with (bias, alpha, dtype, seed), then its `engine`.
std::vector<ParamSpec> theorem1_params(std::vector<ParamSpec> own, ParamSpec engine);
Theorem1Shared parse_theorem1_shared(const Case& c);

// A 2D Theorem 1 case (theorem1, absolute_encoding): its sizes, geometry,
// construction options (heads, head_dim, alpha, dilation; the encoding left
// quadratic) and shared parameters, with the geometry and the hypotheses checked.
struct Theorem1Case2d {
  ConvShape shape;
  ConvGeometry geometry;
  Theorem1Options options;
  Theorem1Shared shared;
  Dtype dtype = Dtype::float64;
};
Theorem1Case2d parse_theorem1_2d(const Case& c);
// The tensors such a case may load instead of drawing them from the seed.
TensorShapes theorem1_2d_tensors(const Theorem1Case2d& p);

// The metrics construction_outcome reports, then a proof's `own`.
std::vector<MetricSpec> theorem1_metrics(std::vector<MetricSpec> own);

// The head_dim the construction needs: a head expresses one kernel slice
// W[:, :, p, q] (C_out x C_in) as W_val W_out of rank <= D_h, and a slice has
// rank <= min(C_in, C_out), generically equal; a grouped slice is
// block-diagonal with the same bound (docs/design.md, "Groups").
int needed_head_dim(int in_channels, int out_channels);

// The tensors a case may load (input, conv_weight, conv_bias) and, with
// "expect": "hold", Theorem 1's hypotheses: heads >= kernel positions,
// head_dim >= needed_head_dim. Throws ParamError.
void check_hypotheses(const Case& c, int kernel_positions, const Theorem1Options& options, int in_channels,
                      int out_channels);

// sqrt(sum over kernel positions of |W_val^h W_out^h - W[:, :, p, q]^T|_F^2), the
// positions without a head counting in full: how far the kernel the layer
// expresses as alpha -> infinity is from the convolution's.
template <class T> double weight_distance(const MhsaLayer<T>& layer, const Kernel<T>& w_conv, int heads);

// Metrics of one construction run: max_abs, rel_l2, alpha, engine, bound (and
// its parts), weight_distance, alpha_min when the case gives a tolerance, and
// for the converse (too few heads, head_dim < needed_head_dim) eckart_young,
// failure_floor and a plain-words message. The default tolerance is
// {"max_abs": bound}, the round-off one {"max_abs": roundoff_allowance}; the
// converse's predicted failure is weight_distance >= failure_floor.
template <class T>
Outcome construction_outcome(const Case& c, const Theorem1Check<T>& check, const Theorem1Options& options,
                             const std::string& engine);

}  // namespace attnconv
