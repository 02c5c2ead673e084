// Cordonnier, Loukas & Jaggi, ICLR 2020, Eq. 7: the absolute positional
// encoding A_qk = (X_q + P_q) W_qry W_key^T (X_k + P_k)^T. The claim checked is
// our own derivation, not the paper's (construction/absolute_encoding.hpp;
// docs/design.md, "Absolute encoding"): with four input channels reserved for
// P_p = (p1, p2, |p|^2, 1) and W_qry W_key^T = M on them, A_qk = -alpha
// |k - q - Delta|^2 + (a term of q alone), so the layer expresses any K1 x K2
// convolution with D_k = 3, within Theorem 1's finite-alpha bound plus the
// round-off of its larger scores. The relative encoding runs beside it on the
// same convolution, to compare the round-off as the image grows. The converse
// ("positions": "added", "expect": "fail"): positions added to the image's own
// channels leave the content cross terms in the scores, and the layer is no
// longer the convolution.
#include <cmath>
#include <limits>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

#include "construction/absolute_encoding.hpp"
#include "metrics/compare.hpp"
#include "mhsa/dense_engine.hpp"
#include "mhsa/engine.hpp"
#include "proof/case_tensors.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"
#include "proof/vacuous.hpp"
#include "theorem1_common.hpp"

namespace attnconv {
namespace metric {
namespace {
const Metric positions{.name = "positions", .type = MetricType::string, .help = "\"reserved\" or \"added\""};
const Metric score_scale{
    .name = "score_scale",
    .help =
        "S = max over heads of sum_a max_q (|x_q| |W_qry|)_a max_k (|x_k| |W_key|)_a: the size of the terms "
        "the absolute scores cancel (grows like alpha (H^2 + W^2))"};
const Metric relative_max_abs{
    .name = "relative_max_abs",
    .help =
        "the relative encoding (Theorem 1's construction) on the same convolution, same engine: max_abs "
        "(within its round-off allowance for the verdict 'holds')",
    .error = true};
const Metric relative_roundoff_allowance{.name = "relative_roundoff_allowance", .help = "its round-off allowance"};
const Metric absolute_minus_relative{
    .name = "absolute_minus_relative",
    .help =
        "max |absolute - relative|: the two layers have the same softmax in exact arithmetic, so this is "
        "round-off"};
const Metric cross_terms{
    .name = "cross_terms",
    .help = "\"added\": max over heads, q, k of |A_qk - P_q M P_k^T| (the content terms in the scores)",
    .always = false};
const Metric scores_only_max_abs{
    .name = "scores_only_max_abs",
    .help = "\"added\": max_abs when only the scores see X + P (the values read X): the cross terms' own failure",
    .always = false};
}  // namespace
}  // namespace metric

namespace {

struct AbsoluteParams : Theorem1Case2d {
  PositionChannels positions = PositionChannels::reserved;
};

void check(AbsoluteParams& p, const Case& c, const Request& request) {
  check_theorem1_2d(p, c, request);
  if (p.positions == PositionChannels::added) {
    if (p.shape.in_channels < 4)
      throw ParamError("in_channels", "adding the four position channels to the image's own needs in_channels >= 4");
    if (request.expect != Expect::fail)
      throw ParamError("positions", "\"added\" is the converse (the content cross terms remain): set \"expect\": \"fail\"");
  }
}

TensorShapes expected_tensors(const AbsoluteParams& p) { return theorem1_2d_tensors(p); }

// max over heads, queries and keys of |A_qk - P_q M P_k^T|: how far the scores
// of `layer` on `tokens` are from their positional part alone.
template <class T>
double cross_terms(const MhsaLayer<T>& layer, const Matrix<T>& tokens, const Matrix<T>& positions_only) {
  double largest = 0;
  for (const AttentionHead<T>& head : layer.heads) {
    const xt::xtensor<double, 2> w_qry = xt::cast<double>(head.w_qry), w_key = xt::cast<double>(head.w_key);
    const xt::xtensor<double, 2> x = xt::cast<double>(tokens), p = xt::cast<double>(positions_only);
    const xt::xtensor<double, 2> full = xt::linalg::dot(xt::linalg::dot(x, w_qry), xt::transpose(xt::linalg::dot(x, w_key)));
    const xt::xtensor<double, 2> part = xt::linalg::dot(xt::linalg::dot(p, w_qry), xt::transpose(xt::linalg::dot(p, w_key)));
    largest = std::max(largest, double(xt::amax(xt::abs(full - part))()));
  }
  return largest;
}

// Bytes at the peak: Theorem 1's relative check (theorem1_common.hpp, dense engine) stays alive while
// the absolute layer runs densely on the padded tokens with their four position channels: twice it.
double memory_estimate(const Case&, const AbsoluteParams& p) {
  ConvShape widened = p.shape;
  widened.in_channels += 4;  // the tokens' position channels P_p
  return 2 * theorem1_memory(widened, p.geometry, p.options, p.dtype, Engine::dense) - process_bytes;
}

template <class T> Outcome verify(const Case& c, const AbsoluteParams& p) {
  const CaseTensors tensors(c, p.shared.seed);
  const Image<T> x = tensors.get<T, 3>("input", p.shape.input());
  const Kernel<T> w = tensors.get<T, 4>("conv_weight", p.shape.weight());
  const std::optional<Vector<T>> b = tensors.conv_bias<T>(p.shared.bias, p.shape.out_channels);
  const ConvGeometry& g = p.geometry;
  const std::array<int, 2> kernel = p.shape.kernel;
  const double alpha = p.options.alpha;

  // The one place this proof chooses its MHSA engine: the absolute layer has content terms.
  const MhsaEngine<T> engine = [](const MhsaLayer<T>& layer, const Matrix<T>& tokens, std::size_t h, std::size_t w_) {
    return mhsa_dense(layer, tokens, h, w_);
  };
  // The relative encoding (Theorem 1) on the same convolution, and its bound.
  const Theorem1Check<T> relative = check_theorem1(x, w, b, g, p.options, engine);

  std::vector<std::optional<std::array<int, 2>>> targets(relative.layer.heads.size());
  for (int h = 0; h < std::min(p.options.heads, kernel[0] * kernel[1]); ++h)
    targets[std::size_t(h)] = target_shift(h / kernel[1], h % kernel[1], kernel, p.options.dilation);
  const MhsaLayer<T> layer = absolute_encoding_layer(relative.layer, targets, alpha, p.positions);
  const Image<T> xpad = pad(x, g.padding, g.padding_mode);
  const std::size_t hp = xpad.shape(1), wp = xpad.shape(2);
  const Matrix<T> tokens = with_positions(image_to_tokens(xpad), hp, wp, p.positions);
  const std::array<int, 2> out_size{int(relative.expected.shape(1)), int(relative.expected.shape(2))};
  const Image<T> actual =
      align_to_convolution(tokens_to_image(engine(layer, tokens, hp, wp), hp, wp), kernel, g, out_size);

  // Theorem 1's bound (leak and sums; no relative score term: targets none)
  // plus the round-off of the absolute scores.
  const std::size_t conv_terms = p.shape.in_channels * std::size_t(kernel[0] * kernel[1]);
  const FiniteAlphaBound base = finite_alpha_bound(layer, tokens, hp, wp, conv_terms, {}, alpha, 1.0);
  const AbsoluteScoreRoundoff scores = absolute_score_roundoff(layer, tokens);
  const double roundoff = base.roundoff(alpha) + scores(base.leak_bound(alpha));
  const double bound = base(alpha) + scores(base.leak_bound(alpha));

  const Difference d = compare(actual, relative.expected);
  const Difference d_relative = compare(relative.actual, relative.expected);
  Outcome out;
  set_distance(out, d);
  out.set(metric::alpha, alpha);
  out.set(metric::engine, to_string(Engine::dense));
  out.set(metric::positions, p.positions == PositionChannels::added ? "added" : "reserved");
  out.set(metric::bound, bound);
  out.set(metric::attention_leak, base.leak(alpha));
  out.set(metric::roundoff_allowance, roundoff);
  out.set(metric::score_scale, scores.largest_score_scale());
  out.set(metric::relative_max_abs, d_relative.max_abs);
  out.set(metric::relative_roundoff_allowance, relative.bound.roundoff(alpha));
  out.set(metric::absolute_minus_relative, compare(actual, relative.actual).max_abs);
  out.default_tolerance = tolerance({{metric::max_abs, bound}});
  // "Holds to round-off" only where the attention is the convolution's at this
  // alpha: the score round-off grows like alpha (H^2 + W^2) and can outgrow the
  // finite-alpha error itself, so max_abs within `roundoff` alone would also
  // admit a layer that is off by its leak. The relative construction on the same
  // convolution and alpha has no such term: it must be at round-off too.
  out.roundoff_tolerance =
      tolerance({{metric::max_abs, roundoff}, {metric::relative_max_abs, relative.bound.roundoff(alpha)}});
  // The converse of Theorem 1's hypotheses (too few heads, head_dim < min(D_in,
  // D_out)), measured as Theorem 1 measures it: the absolute layer's values are
  // the relative construction's, so the kernel it expresses as alpha -> infinity
  // is off the convolution's by weight_distance >= the Eckart-Young tail (any
  // positive distance for positions without a head).
  const std::vector<Matrix<T>>& slices = relative.slices;
  const int positions = kernel[0] * kernel[1];
  const int needed = needed_head_dim(int(p.shape.in_channels), int(p.shape.out_channels));
  out.set(metric::weight_distance, weight_distance(relative.layer, slices, p.options.heads));
  if (!expresses_kernel(p.options, positions, int(p.shape.in_channels), int(p.shape.out_channels))) {
    const double tail = p.options.head_dim < needed ? eckart_young_tail(slices, p.options.head_dim) : 0.0;
    const double weights = double(slices.size() * slices[0].size());
    out.set(metric::failure_floor, tail);
    if (p.options.head_dim < needed) out.set(metric::eckart_young, tail);
    out.set(metric::bound_note, "the bound is on the distance to the alpha -> infinity limit of the construction, "
                                "which is not the convolution here");
    out.predicted_failure = PredictedFailure{
        metric::weight_distance.name, tail, weights * std::numeric_limits<double>::epsilon() * relative.weight_norm.value(),
        p.options.head_dim < needed ? "the Eckart-Young distance of rank-" + std::to_string(p.options.head_dim) + " heads"
                                    : "kernel positions without a head"};
    out.message = p.options.heads < positions
                      ? "only " + std::to_string(p.options.heads) + " heads for " + std::to_string(positions) +
                            " kernel positions: the positions without a head are missing from the output"
                      : "head_dim " + std::to_string(p.options.head_dim) + " < min(in_channels, out_channels) " +
                            std::to_string(needed) + ": each kernel slice is only approximated at rank " +
                            std::to_string(p.options.head_dim);
  }
  if (p.positions == PositionChannels::added) {
    const Matrix<T> positions_only = with_positions(Matrix<T>(xt::zeros<T>(tokens.shape())), hp, wp, p.positions);
    const double cross = cross_terms(layer, tokens, positions_only);
    out.set(metric::cross_terms, cross);
    // The cross terms alone: scores from X + P on the first four channels (the
    // reserved block's W_qry, W_key rows copied onto them), values from X only.
    MhsaLayer<T> scores_only = absolute_encoding_layer(relative.layer, targets, alpha, PositionChannels::reserved);
    const std::size_t d_in = p.shape.in_channels;
    for (AttentionHead<T>& head : scores_only.heads)
      for (Matrix<T>* w : {&head.w_qry, &head.w_key})
        xt::view(*w, xt::range(0, 4), xt::all()) = xt::eval(xt::view(*w, xt::range(d_in, d_in + 4), xt::all()));
    const Matrix<T> reserved_tokens = with_positions(image_to_tokens(xpad), hp, wp, PositionChannels::reserved);
    const Image<T> scores_only_actual = align_to_convolution(
        tokens_to_image(engine(scores_only, reserved_tokens, hp, wp), hp, wp), kernel, g, out_size);
    out.set(metric::scores_only_max_abs, compare(scores_only_actual, relative.expected).max_abs);
    out.set(metric::bound_note, "the bound is the one the construction would meet; the layer here is not the construction");
    out.predicted_failure = PredictedFailure{
        metric::max_abs.name, bound, 0.0,
        "positions added to the image's own channels leave the content cross terms X_q M X_k^T + X_q M P_k^T + "
        "P_q M X_k^T in the scores (up to " + std::to_string(cross) + ") and the positions in the values, so the "
        "output leaves the construction's finite-alpha bound"};
  }
  vacuous_if_zero(out, "the input", x, "the bias");
  vacuous_if_zero(out, "conv_weight (the convolution, and so the layer's values)", w, "the bias");
  out.tensors = conv_tensors<T>(x, relative.expected, actual, w, b);
  out.tensors.push_back({"relative", xt::xarray<T>(relative.actual)});
  for (auto& t : mhsa_layer_tensors(layer)) out.tensors.push_back(std::move(t));
  return out;
}

const bool registered = register_proof(make_proof<AbsoluteParams>({
    .id = "cordonnier2020.absolute_encoding",
    .paper =
        cordonnier2020("Eq. 7 (absolute encoding); the construction is this project's derivation, not the paper's"),
    .statement = "With four input channels reserved for the position P_p = (p1, p2, |p|^2, 1) and W_qry W_key^T zero "
                 "outside them and equal on them to the rank-3 matrix M (M00 = M11 = 2 alpha, M30 = 2 alpha Delta1, "
                 "M31 = 2 alpha "
                 "Delta2, M32 = -alpha), the absolute encoding's scores are -alpha |k - q - Delta|^2 plus a term of q "
                 "alone, so a "
                 "multi-head self-attention layer with K1 K2 heads and D_k = 3 expresses any K1 x K2 convolution "
                 "(values reading "
                 "the image channels only); with the positions added to channels the image uses, it does not.",
    .params = fields<AbsoluteParams>(
        theorem1_2d_params(
            {.shape = {.kernel_maximum = 64, .in_help = "D_in (the image's)", .out_help = "D_out", .groups = false},
             .dilation_maximum = 64,
             .head_dim_help = "D_h (>= out_channels for an exact construction)"}),
        field(&AbsoluteParams::positions,
              {.name = "positions",
               .help = "\"reserved\": P in four channels of its own (the construction); \"added\": P added to the "
                       "image's first four channels (the converse, \"expect\": \"fail\")",
               .default_value = PositionChannels::reserved,
               .named = {{"reserved", PositionChannels::reserved}, {"added", PositionChannels::added}}})),
    .retired = {{"engine", "dense"}},
    .tensors = theorem1_tensor_names(),
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = distance_metrics(
        "the absolute-encoding MHSA against the plain-loop convolution",
        {metric::alpha, metric::engine, metric::positions,
         metric::bound.described(
             "Theorem 1's finite-alpha bound (eps(alpha) sum_h 2 max_k |X_k W_val^h W_out^h| + sums' "
             "round-off) plus the round-off of the absolute scores"),
         metric::attention_leak.described("eps(alpha) = 4 s (1 + s), s = sum_{n>=1} exp(-alpha n^2)"),
         metric::roundoff_allowance, metric::score_scale, metric::relative_max_abs, metric::relative_roundoff_allowance,
         metric::absolute_minus_relative, metric::cross_terms, metric::scores_only_max_abs, metric::weight_distance,
         metric::failure_floor, metric::eckart_young,
         metric::bound_note.described("\"added\": what the bound is about")}),
    .dumps = conv_dumps("the convolution, (C_out, H_out, W_out)", "the absolute-encoding MHSA",
                         mhsa_layer_dumps("(|delta|^2, delta1, delta2), unused (u = v = 0); its X is the padded "
                                          "image's tokens with P_p = (p1, p2, |p|^2, 1) appended (\"reserved\", "
                                          "D_in = C_in + 4) or added to its first four channels (\"added\")",
                                          {{"relative", "Theorem 1's relative construction on the same convolution"}})),
    .memory_estimate = memory_estimate,
    .expected_tensors = expected_tensors,
}));

}  // namespace
}  // namespace attnconv
