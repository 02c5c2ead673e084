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
#include "proof/memory.hpp"
#include "mhsa/engine.hpp"
#include "ops/geometry.hpp"

namespace attnconv {

double theorem1_memory(const ConvShape& shape, const ConvGeometry& g, const Theorem1Options& options, Dtype dtype,
                       Engine engine) {
  const auto& image = shape.image;
  const auto& kernel = shape.kernel;
  const double s = double(dtype_bytes(dtype));
  const double c_in = double(shape.in_channels), c_out = double(shape.out_channels);
  const double heads = options.heads, d_h = options.head_dim;
  const std::size_t hp = std::size_t(image[0] + g.padding.top + g.padding.bottom);
  const std::size_t wp = std::size_t(image[1] + g.padding.left + g.padding.right);
  const double n = double(hp) * double(wp), pixels = double(image[0]) * image[1];
  const double out_pixels =
      double(conv_output_size(image[0], g.padding.top, g.padding.bottom, kernel[0], g.stride[0], g.dilation[0])) *
      conv_output_size(image[1], g.padding.left, g.padding.right, kernel[1], g.stride[1], g.dilation[1]);
  const double layer = s * heads * (c_in * (d_h + 6) + d_h * c_out);
  const double inputs = s * (c_in * pixels + c_out * c_in * kernel[0] * kernel[1] + c_out * out_pixels + 2 * c_in * n) + layer;
  // D_k = D_p, counted as the widest encoding's (quadratic_general, 5).
  const std::size_t d_k = std::size_t(encoding_dim(Encoding::quadratic_general));
  const double during_mhsa = inputs + engine_memory_bytes(engine, hp, wp, std::size_t(c_in), d_k, std::size_t(d_h),
                                                          std::size_t(c_out), std::size_t(s));
  const double at_end = inputs + s * (2 * c_out * n + 2 * c_out * out_pixels + c_in * pixels + c_out * out_pixels) +
                        8 * (2 * c_in * n + c_out * n);
  return process_bytes + std::max(during_mhsa, at_end);
}

void check_hypotheses(const Request& request, int kernel_positions, const Theorem1Options& options, int in_channels,
                      int out_channels) {
  if (request.expect != Expect::hold) return;
  if (options.heads < kernel_positions)
    throw ParamError("heads", "Theorem 1 needs heads >= the number of kernel positions = " +
                                  std::to_string(kernel_positions) + "; set \"expect\": \"fail\" to check the converse");
  const int needed = needed_head_dim(in_channels, out_channels);
  if (options.head_dim < needed)
    throw ParamError("head_dim", "Theorem 1 needs head_dim >= min(in_channels, out_channels) = " +
                                     std::to_string(needed) + " (the rank a kernel slice can have, grouped or not); "
                                     "set \"expect\": \"fail\" to check the rank-limited case");
}

Field<Theorem1Shared> theorem1_shared() {
  using S = Theorem1Shared;
  return group<S>({field(&S::bias, bias_param()),
                   field(&S::alpha, {.name = "alpha", .help = "attention sharpness (> 0)", .default_value = 60.0,
                                     .minimum = 0.0, .exclusive_minimum = true}),
                   field(&S::seed, seed_param())});
}

std::vector<std::string> theorem1_tensor_names() { return {"input", "conv_weight", "conv_bias", "reference_output"}; }

std::vector<Field<Theorem1Case2d>> theorem1_2d_params(Theorem1ParamOptions o) {
  using P = Theorem1Case2d;
  return {nested(&P::shape, conv_shape(o.shape)),
          field(&P::options, &Theorem1Options::heads, {.name = "heads", .help = "N_h (>= K1*K2 for the claim)", .minimum = 1}),
          field(&P::options, &Theorem1Options::head_dim, {.name = "head_dim", .help = o.head_dim_help, .minimum = 1}),
          nested(&P::geometry, conv_geometry({.dilation_maximum = o.dilation_maximum})),
          nested(&P::shared, theorem1_shared()),
          field(&P::dtype, dtype_param())};
}

void check_theorem1_2d(Theorem1Case2d& p, const Case&, const Request& request) {
  p.options.alpha = p.shared.alpha;
  p.options.dilation = p.geometry.dilation;
  check_hypotheses(request, p.shape.kernel[0] * p.shape.kernel[1], p.options, int(p.shape.in_channels),
                   int(p.shape.out_channels));
}

TensorShapes theorem1_2d_tensors(const Theorem1Case2d& p) {
  const auto x = p.shape.input();
  const auto w = p.shape.weight();
  TensorShapes out{{"input", {x.begin(), x.end()}}, {"conv_weight", {w.begin(), w.end()}}};
  if (p.shared.bias) out["conv_bias"] = {p.shape.out_channels};
  out["reference_output"] = conv_output_shape(p.shape, p.geometry);
  return out;
}

std::vector<Metric> theorem1_metrics(std::vector<Metric> own) {
  std::vector<Metric> metrics = distance_metrics("MHSA against the plain-loop convolution");
  metrics.insert(metrics.end(), {metric::alpha, metric::engine, metric::encoding, metric::lambda_min, metric::bound,
                                 metric::attention_leak, metric::roundoff_allowance, metric::weight_distance,
                                 metric::alpha_min, metric::eckart_young, metric::failure_floor, metric::bound_note});
  metrics.insert(metrics.end(), own.begin(), own.end());
  return metrics;
}

template <class T> double weight_distance(const MhsaLayer<T>& layer, const std::vector<Matrix<T>>& slices, int heads) {
  const std::size_t positions = slices.size(), d_h = layer.head_dim();
  double total = 0;
  for (std::size_t h = 0; h < positions; ++h) {  // |W_val^h W_out^h - M_h|_F^2, M_h = W_conv[:, :, p, q]^T
    const Matrix<T>& target = slices[h];
    const xt::xtensor<double, 2> product =
        h < std::size_t(heads)
            ? head_weight_product(layer.heads[h].w_val,
                                  Matrix<T>(xt::view(layer.w_out, xt::range(h * d_h, (h + 1) * d_h), xt::all())), false)
            : xt::xtensor<double, 2>(xt::zeros<double>(target.shape()));
    double sum = 0;
    for (std::size_t k = 0; k < target.size(); ++k) {
      const double diff = product.data()[k] - double(target.data()[k]);
      sum += diff * diff;
    }
    total += sum;
  }
  return std::sqrt(total);
}

template <class T>
Outcome construction_outcome(const Request& request, const Theorem1Check<T>& check, const Theorem1Options& options,
                             const std::string& engine) {
  const std::vector<Matrix<T>>& slices = check.slices;  // block-diagonal for a grouped convolution
  const Difference d = compare(check.actual, check.expected);
  const FiniteAlphaBound& b = check.bound;
  const double bound = b(options.alpha);
  Outcome out;
  set_distance(out, d);
  out.set(metric::alpha, options.alpha);
  out.set(metric::engine, engine);
  out.set(metric::encoding, to_string(options.encoding));
  out.set(metric::bound, bound);
  out.set(metric::attention_leak, b.leak(options.alpha));
  out.set(metric::roundoff_allowance, b.roundoff(options.alpha));
  out.set(metric::lambda_min, b.lambda_min);
  out.default_tolerance = tolerance({{metric::max_abs, bound}});
  out.roundoff_tolerance = tolerance({{metric::max_abs, b.roundoff(options.alpha)}});

  // alpha_min: the smallest alpha whose bound meets the case's tolerance. A
  // rel_l2 tolerance t is met when max_abs <= t |expected|_2 / sqrt(numel).
  const json& asked = request.tolerance;
  if (asked.contains(metric::max_abs.name) || asked.contains(metric::rel_l2.name)) {
    double limit = std::numeric_limits<double>::infinity();
    if (asked.contains(metric::max_abs.name)) limit = asked[metric::max_abs.name].get<double>();
    if (asked.contains(metric::rel_l2.name)) {
      const double norm = std::sqrt(double(xt::sum(xt::square(xt::cast<double>(check.expected)))()));
      limit = std::min(limit, asked[metric::rel_l2.name].get<double>() * norm / std::sqrt(double(check.expected.size())));
    }
    const double a = alpha_min(b, limit);
    out.set(metric::alpha_min, std::isnan(a) ? json(nullptr) : json(a));
    if (std::isnan(a))
      out.message = "no alpha up to 4096 brings the bound under the tolerance: the round-off allowance alone exceeds it";
  }

  const int positions = int(slices.size());
  const int c_out = int(slices[0].shape(1)), needed = needed_head_dim(int(slices[0].shape(0)), c_out);
  const auto note = [&](const std::string& s) { out.message += (out.message.empty() ? "" : "; ") + s; };
  out.set(metric::weight_distance, weight_distance(check.layer, slices, options.heads));
  if (!expresses_kernel(options, positions, int(slices[0].shape(0)), c_out)) {
    out.set(metric::bound_note, "the bound is on the distance to the alpha -> infinity limit of the construction, "
                                "which is not the convolution here");
    // Eckart-Young: no rank-D_h W_val^h W_out^h is closer to a slice than its
    // singular-value tail, so weight_distance >= eckart_young exactly; both are
    // computed in double from the same weights, each within n u |W|_F.
    const double tail = options.head_dim < needed ? eckart_young_tail(slices, options.head_dim) : 0.0;
    const double weights = double(slices.size() * slices[0].size());
    out.set(metric::failure_floor, tail);
    out.predicted_failure = PredictedFailure{
        metric::weight_distance.name, tail, weights * std::numeric_limits<double>::epsilon() * check.weight_norm.value(),
        options.head_dim < needed ? "the Eckart-Young distance of rank-" + std::to_string(options.head_dim) + " heads"
                                 : "kernel positions without a head"};
  }
  if (options.head_dim < needed) {
    const double tail = out.get(metric::failure_floor);
    out.set(metric::eckart_young, tail);
    note("head_dim " + std::to_string(options.head_dim) + " < min(in_channels, out_channels) " + std::to_string(needed) +
         ": a head's W_val W_out has rank <= " + std::to_string(options.head_dim) +
         ", so each kernel slice is only approximated by its best rank-" + std::to_string(options.head_dim) +
         " factorisation; the weights are off by " + short_number(double(out.get(metric::weight_distance))) +
         " (Frobenius), and no choice of W_val, W_out can do better than the Eckart-Young distance " + short_number(tail));
  }
  if (options.heads < positions)
    note("only " + std::to_string(options.heads) + " heads for " + std::to_string(positions) +
         " kernel positions: one head attends to one shift, so the " + std::to_string(positions - options.heads) +
         " positions without a head are missing from the output");
  return out;
}

template <class T> std::vector<NamedTensor> head_weight_tensors(const MhsaLayer<T>& layer) {
  if (!DumpedTensors::wanted()) return {};
  const std::size_t heads = layer.heads.size();
  xt::xarray<T> w_val = xt::zeros<T>({heads, layer.in_dim(), layer.head_dim()});
  for (std::size_t h = 0; h < heads; ++h) xt::view(w_val, h) = layer.heads[h].w_val;
  return {{"w_val", std::move(w_val)}, {"w_out", xt::xarray<T>(layer.w_out)}, {"b_out", xt::xarray<T>(layer.b_out)}};
}

template <class T> std::vector<NamedTensor> mhsa_layer_tensors(const MhsaLayer<T>& layer) {
  if (!DumpedTensors::wanted()) return {};
  const AttentionHead<T>& first = layer.heads.front();
  const std::size_t heads = layer.heads.size(), d_k = first.w_qry.shape(1), d_p = first.w_key_hat.shape(1);
  xt::xarray<T> w_qry = xt::zeros<T>({heads, layer.in_dim(), d_k}), w_key = w_qry;
  xt::xarray<T> w_key_hat = xt::zeros<T>({heads, d_k, d_p}), u = xt::zeros<T>({heads, d_k}), v = u;
  for (std::size_t h = 0; h < heads; ++h) {
    xt::view(w_qry, h) = layer.heads[h].w_qry;
    xt::view(w_key, h) = layer.heads[h].w_key;
    xt::view(w_key_hat, h) = layer.heads[h].w_key_hat;
    xt::view(u, h) = layer.heads[h].u;
    xt::view(v, h) = layer.heads[h].v;
  }
  std::vector<NamedTensor> tensors{{"w_qry", std::move(w_qry)}, {"w_key", std::move(w_key)},
                                   {"w_key_hat", std::move(w_key_hat)}, {"u", std::move(u)}, {"v", std::move(v)}};
  for (auto& t : head_weight_tensors(layer)) tensors.push_back(std::move(t));
  return tensors;
}

std::vector<TensorDump> mhsa_layer_dumps(const std::string& encoding, std::vector<TensorDump> more) {
  more.insert(more.end(),
              {{"w_qry", "(N_h, D_in, D_k): the layer of Eq. 8, A_qk = (X_q W_qry)(X_k W_key)^T + (X_q W_qry).(W^_key "
                         "r_delta) + u.(X_k W_key) + v.(W^_key r_delta), delta = k - q, r_delta " + encoding},
               {"w_key", "(N_h, D_in, D_k)"},
               {"w_key_hat", "(N_h, D_k, D_p): W^_key"},
               {"u", "(N_h, D_k)"},
               {"v", "(N_h, D_k)"},
               {"w_val", "(N_h, D_in, D_h): W_val^h"},
               {"w_out", "(N_h D_h, D_out): W_out, head h's rows h D_h ... (h + 1) D_h - 1"},
               {"b_out", "(D_out)"}});
  return more;
}

template std::vector<NamedTensor> head_weight_tensors(const MhsaLayer<float>&);
template std::vector<NamedTensor> head_weight_tensors(const MhsaLayer<double>&);
template std::vector<NamedTensor> mhsa_layer_tensors(const MhsaLayer<float>&);
template std::vector<NamedTensor> mhsa_layer_tensors(const MhsaLayer<double>&);
template double weight_distance(const MhsaLayer<float>&, const std::vector<Matrix<float>>&, int);
template double weight_distance(const MhsaLayer<double>&, const std::vector<Matrix<double>>&, int);
template Outcome construction_outcome(const Request&, const Theorem1Check<float>&, const Theorem1Options&,
                                      const std::string&);
template Outcome construction_outcome(const Request&, const Theorem1Check<double>&, const Theorem1Options&,
                                      const std::string&);

}  // namespace attnconv
