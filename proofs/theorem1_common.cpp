#include "theorem1_common.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

#include "proof/npy.hpp"
#include "proof/short_number.hpp"
#include "metrics/compare.hpp"
#include "proof/common_params.hpp"

namespace attnconv {

int needed_head_dim(int in_channels, int out_channels) { return std::min(in_channels, out_channels); }

void check_hypotheses(const Case& c, int kernel_positions, const Theorem1Options& options, int in_channels,
                      int out_channels) {
  check_tensor_names(c, {"input", "conv_weight", "conv_bias", "reference_output"});
  if (c.expect != "hold") return;
  if (options.heads < kernel_positions)
    throw ParamError("heads", "Theorem 1 needs heads >= the number of kernel positions = " +
                                  std::to_string(kernel_positions) + "; set \"expect\": \"fail\" to check the converse");
  const int needed = needed_head_dim(in_channels, out_channels);
  if (options.head_dim < needed)
    throw ParamError("head_dim", "Theorem 1 needs head_dim >= min(in_channels, out_channels) = " +
                                     std::to_string(needed) + " (the rank a kernel slice can have, grouped or not); "
                                     "set \"expect\": \"fail\" to check the rank-limited case");
}

std::vector<ParamSpec> theorem1_params(std::vector<ParamSpec> own, ParamSpec engine) {
  own.insert(own.end(), {
      bias_param(),
      {.name = "alpha", .kind = ParamKind::number, .default_value = 60.0, .help = "attention sharpness (> 0)",
       .minimum = 0.0, .exclusive_minimum = true},
      dtype_param(),
      seed_param(),
      std::move(engine),
  });
  return own;
}

Theorem1Shared parse_theorem1_shared(const Case& c) {
  return {.bias = c.params.at("bias").get<bool>(),
          .alpha = get_number(c.params, "alpha"),
          .dtype = case_dtype(c),
          .seed = case_seed(c),
          .engine = c.params.at("engine").get<std::string>()};
}

Theorem1Case2d parse_theorem1_2d(const Case& c) {
  Theorem1Case2d p;
  p.shape = case_conv_shape(c);
  p.geometry = case_geometry(c);
  p.shared = parse_theorem1_shared(c);
  p.dtype = p.shared.dtype;
  p.options.heads = get_int(c.params, "heads");
  p.options.head_dim = get_int(c.params, "head_dim");
  p.options.alpha = p.shared.alpha;
  p.options.dilation = p.geometry.dilation;
  check_geometry(p.geometry, p.shape.image, p.shape.kernel, "kernel");
  check_hypotheses(c, p.shape.kernel[0] * p.shape.kernel[1], p.options, int(p.shape.in_channels),
                   int(p.shape.out_channels));
  return p;
}

TensorShapes theorem1_2d_tensors(const Theorem1Case2d& p) {
  const auto x = p.shape.input();
  const auto w = p.shape.weight();
  TensorShapes out{{"input", {x.begin(), x.end()}}, {"conv_weight", {w.begin(), w.end()}}};
  if (p.shared.bias) out["conv_bias"] = {p.shape.out_channels};
  out["reference_output"] = conv_output_shape(p.shape, p.geometry);
  return out;
}

std::vector<MetricSpec> theorem1_metrics(std::vector<MetricSpec> own) {
  std::vector<MetricSpec> metrics = distance_metrics("MHSA against the plain-loop convolution");
  metrics.insert(metrics.end(), {
      {.name = "alpha", .type = "number", .help = "the attention sharpness used"},
      {.name = "engine", .type = "string", .help = "the MHSA engine that ran"},
      {.name = "encoding", .type = "string", .help = "the relative positional encoding"},
      {.name = "lambda_min", .type = "number",
       .help = "smallest eigenvalue of the per-head precision A (1 for the quadratic encoding)"},
      {.name = "bound", .type = "number",
       .help = "finite-alpha bound on max_abs: eps(alpha) * sum_h 2 max_k |X_k W_val^h W_out^h| + round-off"},
      {.name = "attention_leak", .type = "number",
       .help = "eps(alpha) = 4 s (1 + s), s = sum_{n>=1} exp(-alpha lambda_min n^2)"},
      {.name = "roundoff_allowance", .type = "number",
       .help = "the round-off part of the bound: max_abs within it is the convolution to round-off"},
      {.name = "weight_distance", .type = "number",
       .help = "Frobenius distance of the construction's alpha -> infinity kernel (W_val^h W_out^h per position) to "
               "the convolution's, positions without a head counted in full",
       .error = true},
      {.name = "alpha_min", .type = "number",
       .help = "with a max_abs or rel_l2 tolerance: the smallest alpha whose bound meets it (null: none up to 4096)",
       .always = false},
      {.name = "eckart_young", .type = "number",
       .help = "head_dim < min(in_channels, out_channels): the best weight_distance any W_val, W_out can reach",
       .always = false},
      {.name = "failure_floor", .type = "number",
       .help = "the converse: the least weight_distance predicted (eckart_young, or 0 with too few heads: any "
               "positive distance)",
       .always = false},
      {.name = "bound_note", .type = "string", .help = "the converse: what the bound is about", .always = false},
  });
  metrics.insert(metrics.end(), own.begin(), own.end());
  return metrics;
}

template <class T> double weight_distance(const MhsaLayer<T>& layer, const Kernel<T>& w_conv, int heads) {
  const std::size_t k2 = w_conv.shape(3), positions = w_conv.shape(2) * k2, d_h = layer.head_dim();
  double total = 0;
  for (std::size_t h = 0; h < positions; ++h) {
    const xt::xtensor<double, 2> target =
        xt::transpose(xt::cast<double>(xt::view(w_conv, xt::all(), xt::all(), h / k2, h % k2)));
    xt::xtensor<double, 2> diff = -target;
    if (h < std::size_t(heads))
      diff += xt::linalg::dot(xt::cast<double>(layer.heads[h].w_val),
                              xt::cast<double>(xt::view(layer.w_out, xt::range(h * d_h, (h + 1) * d_h), xt::all())));
    total += double(xt::sum(diff * diff)());
  }
  return std::sqrt(total);
}

template <class T>
Outcome construction_outcome(const Case& c, const Theorem1Check<T>& check, const Theorem1Options& options,
                             const std::string& engine) {
  const Kernel<T>& w_conv = check.dense_weight;  // block-diagonal slices for a grouped convolution
  const Difference d = compare(check.actual, check.expected);
  const FiniteAlphaBound& b = check.bound;
  const double bound = b(options.alpha);
  Outcome out;
  out.metrics = {{"max_abs", d.max_abs},
                 {"rel_l2", d.rel_l2},
                 {"alpha", options.alpha},
                 {"engine", engine},
                 {"encoding", to_string(options.encoding)},
                 {"bound", bound},
                 {"attention_leak", b.leak(options.alpha)},
                 {"roundoff_allowance", b.roundoff(options.alpha)},
                 {"lambda_min", b.lambda_min}};
  out.default_tolerance = {{"max_abs", bound}};
  out.roundoff_tolerance = {{"max_abs", b.roundoff(options.alpha)}};

  // alpha_min: the smallest alpha whose bound meets the case's tolerance. A
  // rel_l2 tolerance t is met when max_abs <= t |expected|_2 / sqrt(numel).
  if (!c.tolerance.empty() && (c.tolerance.contains("max_abs") || c.tolerance.contains("rel_l2"))) {
    double limit = std::numeric_limits<double>::infinity();
    if (c.tolerance.contains("max_abs")) limit = c.tolerance["max_abs"].get<double>();
    if (c.tolerance.contains("rel_l2")) {
      const double norm = std::sqrt(double(xt::sum(xt::square(xt::cast<double>(check.expected)))()));
      limit = std::min(limit, c.tolerance["rel_l2"].get<double>() * norm / std::sqrt(double(check.expected.size())));
    }
    const double a = alpha_min(b, limit);
    out.metrics["alpha_min"] = std::isnan(a) ? json(nullptr) : json(a);
    if (std::isnan(a))
      out.message = "no alpha up to 4096 brings the bound under the tolerance: the round-off allowance alone exceeds it";
  }

  const int positions = int(w_conv.shape(2) * w_conv.shape(3));
  const int c_out = int(w_conv.shape(0)), needed = needed_head_dim(int(w_conv.shape(1)), c_out);
  const auto note = [&](const std::string& s) { out.message += (out.message.empty() ? "" : "; ") + s; };
  out.metrics["weight_distance"] = weight_distance(check.layer, w_conv, options.heads);
  if (options.head_dim < needed || options.heads < positions) {
    out.metrics["bound_note"] = "the bound is on the distance to the alpha -> infinity limit of the construction, "
                                "which is not the convolution here";
    // Eckart-Young: no rank-D_h W_val^h W_out^h is closer to a slice than its
    // singular-value tail, so weight_distance >= eckart_young exactly; both are
    // computed in double from the same weights, each within n u |W|_F.
    const double tail = options.head_dim < needed ? eckart_young_tail(w_conv, options.head_dim) : 0.0;
    const double w_norm = std::sqrt(double(xt::sum(xt::square(xt::cast<double>(w_conv)))()));
    out.metrics["failure_floor"] = tail;
    out.predicted_failure = PredictedFailure{
        "weight_distance", tail, double(w_conv.size()) * std::numeric_limits<double>::epsilon() * w_norm,
        options.head_dim < needed ? "the Eckart-Young distance of rank-" + std::to_string(options.head_dim) + " heads"
                                 : "kernel positions without a head"};
  }
  if (options.head_dim < needed) {
    const double tail = out.metrics["failure_floor"];
    out.metrics["eckart_young"] = tail;
    note("head_dim " + std::to_string(options.head_dim) + " < min(in_channels, out_channels) " + std::to_string(needed) +
         ": a head's W_val W_out has rank <= " + std::to_string(options.head_dim) +
         ", so each kernel slice is only approximated by its best rank-" + std::to_string(options.head_dim) +
         " factorisation; the weights are off by " + short_number(double(out.metrics["weight_distance"])) +
         " (Frobenius), and no choice of W_val, W_out can do better than the Eckart-Young distance " + short_number(tail));
  }
  if (options.heads < positions)
    note("only " + std::to_string(options.heads) + " heads for " + std::to_string(positions) +
         " kernel positions: one head attends to one shift, so the " + std::to_string(positions - options.heads) +
         " positions without a head are missing from the output");
  return out;
}

template double weight_distance(const MhsaLayer<float>&, const Kernel<float>&, int);
template double weight_distance(const MhsaLayer<double>&, const Kernel<double>&, int);
template Outcome construction_outcome(const Case&, const Theorem1Check<float>&, const Theorem1Options&,
                                      const std::string&);
template Outcome construction_outcome(const Case&, const Theorem1Check<double>&, const Theorem1Options&,
                                      const std::string&);

}  // namespace attnconv
