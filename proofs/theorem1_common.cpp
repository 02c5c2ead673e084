#include "theorem1_common.hpp"

#include <cmath>
#include <limits>
#include <utility>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

#include "harness/short_number.hpp"
#include "metrics/compare.hpp"

namespace attnconv {

void check_hypotheses(const Case& c, int kernel_positions) {
  check_tensor_names(c, {"input", "conv_weight", "conv_bias"});
  if (c.expect != "hold") return;
  if (get_int(c.params, "heads") < kernel_positions)
    throw ParamError("heads", "Theorem 1 needs heads >= the number of kernel positions = " +
                                  std::to_string(kernel_positions) + "; set \"expect\": \"fail\" to check the converse");
  if (get_int(c.params, "head_dim") < get_int(c.params, "out_channels"))
    throw ParamError("head_dim", "Theorem 1 needs head_dim >= out_channels = " +
                                     std::to_string(get_int(c.params, "out_channels")) +
                                     "; set \"expect\": \"fail\" to check the rank-limited case");
}

std::vector<ParamSpec> theorem1_params(std::vector<ParamSpec> own, ParamSpec engine) {
  own.insert(own.end(), {
      {"bias", ParamKind::boolean, true, "whether the convolution has a bias"},
      {"alpha", ParamKind::number, 60.0, "attention sharpness (> 0)", 0.0, true},
      {"dtype", ParamKind::string, "float64", "", std::nullopt, false, {"float32", "float64"}},
      {"seed", ParamKind::integer, 0, "seed of the inputs and weights", 0},
      std::move(engine),
  });
  return own;
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
Outcome construction_outcome(const Case& c, const Theorem1Check<T>& check, const Kernel<T>& w_conv,
                             const Theorem1Options& options, const std::string& engine) {
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
  const int c_out = int(w_conv.shape(0));
  const auto note = [&](const std::string& s) { out.message += (out.message.empty() ? "" : "; ") + s; };
  if (options.head_dim < c_out || options.heads < positions) {
    out.metrics["weight_distance"] = weight_distance(check.layer, w_conv, options.heads);
    out.metrics["bound_note"] = "the bound is on the distance to the alpha -> infinity limit of the construction, "
                                "which is not the convolution here";
  }
  if (options.head_dim < c_out) {
    const double tail = eckart_young_tail(w_conv, options.head_dim);
    out.metrics["eckart_young"] = tail;
    note("head_dim " + std::to_string(options.head_dim) + " < out_channels " + std::to_string(c_out) +
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
template Outcome construction_outcome(const Case&, const Theorem1Check<float>&, const Kernel<float>&,
                                      const Theorem1Options&, const std::string&);
template Outcome construction_outcome(const Case&, const Theorem1Check<double>&, const Kernel<double>&,
                                      const Theorem1Options&, const std::string&);

}  // namespace attnconv
