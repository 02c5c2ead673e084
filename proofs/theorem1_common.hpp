#pragma once
// What the Theorem 1 proofs (2D, 1D, padding remark) share: drawing or loading
// the case's tensors, the geometry checks, and the metrics of a construction
// run (error, finite-alpha bound, alpha_min, the converse's distances).
#include <optional>
#include <string>
#include <vector>

#include "construction/theorem1_check.hpp"
#include "harness/conv_geometry.hpp"
#include "harness/errors.hpp"
#include "harness/npy.hpp"
#include "harness/proof.hpp"
#include "tensor/random.hpp"

namespace attnconv {

// The paper, as each Theorem 1 proof cites it, followed by the part it checks.
inline std::string cordonnier2020(const std::string& part) {
  return "Cordonnier, Loukas & Jaggi, On the Relationship between Self-Attention and Convolutional Layers, ICLR "
         "2020, " + part;
}

// A Theorem 1 proof's parameters: its own, then those every one of them ends
// with (bias, alpha, dtype, seed), then its `engine`.
std::vector<ParamSpec> theorem1_params(std::vector<ParamSpec> own, ParamSpec engine);

// The metrics construction_outcome reports, then a proof's `own`.
std::vector<MetricSpec> theorem1_metrics(std::vector<MetricSpec> own);

// The tensors a Theorem 1 proof dumps (--dump-tensors): input, expected, actual,
// conv_weight, conv_bias (zeros when the convolution has no bias).
template <class T, class X, class Y, class W>
std::vector<NamedTensor> conv_tensors(const X& x, const Y& expected, const Y& actual, const W& w,
                                      const std::optional<Vector<T>>& b) {
  const std::size_t c_out = w.shape(0);
  return {{"input", xt::xarray<T>(x)},
          {"expected", xt::xarray<T>(expected)},
          {"actual", xt::xarray<T>(actual)},
          {"conv_weight", xt::xarray<T>(w)},
          {"conv_bias", xt::xarray<T>(b ? *b : Vector<T>(xt::zeros<T>({c_out})))}};
}

// The tensor `key` of the case: loaded from its "weights" entry with exactly
// `shape`, or drawn uniform in [-1, 1) from the case's seed (one stream per key).
template <class T, std::size_t N>
xt::xtensor<T, N> case_tensor(const Case& c, const char* key, const std::array<std::size_t, N>& shape) {
  if (has_case_tensor(c, key))
    return xt::xtensor<T, N>(load_case_tensor<T>(c, key, std::vector<std::size_t>(shape.begin(), shape.end())));
  const Random random(std::uint64_t(c.params.at("seed").get<long long>()));
  return random.stream(purpose_id(key)).uniform_tensor<T, N>(shape);
}


// The convolution's bias: none when the case's "bias" is false, else the
// tensor "conv_bias" of c_out values (loaded or drawn as case_tensor does).
template <class T> std::optional<Vector<T>> case_bias(const Case& c, std::size_t c_out) {
  if (!c.params.at("bias").get<bool>()) return std::nullopt;
  return case_tensor<T, 1>(c, "conv_bias", {c_out});
}

// The tensors a case may load (input, conv_weight, conv_bias) and, with
// "expect": "hold", Theorem 1's hypotheses: heads >= kernel positions,
// head_dim >= out_channels.
void check_hypotheses(const Case& c, int kernel_positions);

// sqrt(sum over kernel positions of |W_val^h W_out^h - W[:, :, p, q]^T|_F^2), the
// positions without a head counting in full: how far the kernel the layer
// expresses as alpha -> infinity is from the convolution's.
template <class T> double weight_distance(const MhsaLayer<T>& layer, const Kernel<T>& w_conv, int heads);

// Metrics of one construction run: max_abs, rel_l2, alpha, engine, bound (and
// its parts), weight_distance, alpha_min when the case gives a tolerance, and
// for the converse (too few heads, head_dim < out_channels) eckart_young,
// failure_floor and a plain-words message. The default tolerance is
// {"max_abs": bound}, the round-off one {"max_abs": roundoff_allowance}; the
// converse's predicted failure is weight_distance >= failure_floor.
template <class T>
Outcome construction_outcome(const Case& c, const Theorem1Check<T>& check, const Kernel<T>& w_conv,
                             const Theorem1Options& options, const std::string& engine);

}  // namespace attnconv
