// Chang, Xu, Xu & Tu, "Convolutions and Self-Attention: Re-interpreting
// Relative Positions in Pre-trained Language Models", ACL 2021: on a sequence,
// self-attention with W_qry = W_key = 0 and a relative position bias
// beta_h(j - i) gives y_i = sum_j softmax_j(beta_h(j - i)) v_j, a lightweight
// convolution (Wu et al., ICLR 2019: a depthwise kernel softmax-normalised over
// its taps, shared per head, zero padding). The values are the input (W_val = I).
// With beta = -inf outside [-k, k] the two are equal on the interior
// k <= i < L - k; in the end bands (k tokens each side) the attention
// renormalises over the tokens that exist while the convolution gives weight to
// the padded zeros: measured. With a finite bias outside the window (clipped
// relative positions, Shaw et al. 2018) the attention's kernel has unbounded
// support: the mass outside the window and the error are measured ("expect": "fail").
// fairseq's two classes (facebookresearch/fairseq, modules/lightweight_convolution.py)
// are both taken ("class"): LightweightConv1dTBC's contiguous heads and
// LightweightConv1d's interleaved ones; with LightweightConv1dTBC also the
// causal padding of fairseq's decoders (padding_l = K - 1: the window
// [-(K - 1), 0], one end band of K - 1 tokens at the start) and, for either,
// the optional per-channel bias (added by both sides: the attention's output bias).
#include <cmath>
#include <limits>
#include <xtensor/xview.hpp>

#include "io/errors.hpp"
#include "metrics/compare.hpp"
#include "mhsa/relative_bias_attention.hpp"
#include "tensor/channel_heads.hpp"
#include "ops/lightweight_conv.hpp"
#include "proof/case_tensors.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"
#include "proof/vacuous.hpp"

namespace attnconv {
namespace metric {
namespace {
const Metric bias{.name = "bias", .type = MetricType::string, .help = "\"masked\" or \"clipped\""};
const Metric roundoff_allowance{.name = "roundoff_allowance",
                                .help = "2 gamma_{4k+5} max|x|: max_abs within it is round-off"};
const Metric end_band_tokens{.name = "end_band_tokens",
                             .type = MetricType::integer,
                             .help = "the tokens at the ends where the two may differ: padding_l at the start, "
                                     "K - 1 - padding_l at the end (k and k; causal: K - 1 and 0)"};
const Metric fairseq_class{.name = "class", .type = MetricType::string,
                           .help = "fairseq's class: \"LightweightConv1dTBC\" (contiguous heads) or "
                                   "\"LightweightConv1d\" (interleaved)"};
const Metric class_difference{
    .name = "class_difference",
    .help = "max |LightweightConv1dTBC - LightweightConv1d| with the case's input and kernels (\"same\" padding): what "
            "reading the heads in the other class's layout changes (0 with one head)",
    .always = false};
const Metric padding_l{.name = "padding_l", .type = MetricType::integer, .help = "the left padding: k, or K - 1 causal"};
const Metric end_band_max_abs{
    .name = "end_band_max_abs",
    .help =
        "max |attention - convolution| over the end bands (the attention renormalises over the tokens that "
        "exist, the convolution weighs padded zeros)"};
const Metric end_band_padded_weight{
    .name = "end_band_padded_weight",
    .help = "the largest kernel weight a token of the end bands gives to padded zeros (its k taps outside)"};
const Metric outside_mass{.name = "outside_mass",
                          .help = "max over heads and queries of the attention on keys outside the window "
                                  "[-padding_l, K - 1 - padding_l] (0 when masked)",
                          .error = true};
const Metric centre_outside_mass{.name = "centre_outside_mass", .help = "the same for the middle token i = L / 2"};
}  // namespace
}  // namespace metric

namespace {

enum class Padding1d { same, causal };

struct LightweightParams {
  std::size_t length = 0, channels = 0, heads = 0, radius = 0;
  BiasOutsideWindow outside = BiasOutsideWindow::masked;
  HeadLayout layout = HeadLayout::contiguous;  // the fairseq class
  Padding1d padding = Padding1d::same;
  bool conv_bias = false;
  Dtype dtype = Dtype::float64;
  std::uint64_t seed = 0;
};

const char* class_name(HeadLayout layout) {
  return layout == HeadLayout::contiguous ? "LightweightConv1dTBC" : "LightweightConv1d";
}

// padding_l: k for "same", K - 1 = 2k for causal.
std::size_t left_padding(const LightweightParams& p) { return p.padding == Padding1d::causal ? 2 * p.radius : p.radius; }

void check(LightweightParams& p, const Case& c, const Request& request) {
  if (!p.conv_bias && has_case_tensor(c, "conv_bias"))
    throw ParamError("conv_bias", "the case loads weights.conv_bias, which \"conv_bias\": false leaves unused");
  if (p.padding == Padding1d::causal && p.layout == HeadLayout::interleaved)
    throw ParamError("padding", "LightweightConv1d pads both sides alike (F.conv1d's padding); the causal padding "
                                "padding_l = K - 1 of fairseq's decoders is LightweightConv1dTBC's: set \"class\": "
                                "\"LightweightConv1dTBC\"");
  if (p.channels % p.heads != 0)
    throw ParamError("heads", "the heads split the channels: heads must divide channels = " + std::to_string(p.channels));
  if (p.length < 2 * p.radius + 1)
    throw ParamError("radius", "the sequence needs an interior: length >= 2 radius + 1 = " +
                                   std::to_string(2 * p.radius + 1));
  if (p.outside == BiasOutsideWindow::clipped && request.expect != Expect::fail)
    throw ParamError("bias", "a clipped (finite) bias outside the window is the converse: set \"expect\": \"fail\"");
  if (p.outside == BiasOutsideWindow::clipped && p.length <= 2 * p.radius + 1)
    throw ParamError("length", "with length <= 2 radius + 1 no offset lies outside the window");
}

TensorShapes expected_tensors(const LightweightParams& p) {
  TensorShapes shapes{{"input", {p.channels, p.length}}, {"kernel_logits", {p.heads, 2 * p.radius + 1}}};
  if (p.conv_bias) shapes["conv_bias"] = {p.channels};
  return shapes;
}

// Bytes at the peak, s bytes an element: the sequences (the input, the attention's and the
// convolution's outputs with and without the bias, their interior and band columns, the dumps: about
// 12 C L), the relative bias beta (N_h (2L - 1)), one query's attention row (L) and the logits and
// kernels (3 N_h (2k + 1)).
double memory_estimate(const Case&, const LightweightParams& p) {
  const double s = double(dtype_bytes(p.dtype)), l = double(p.length), heads = double(p.heads);
  return process_bytes + s * (12 * double(p.channels) * l + heads * (2 * l - 1) + l + 3 * heads * (2 * double(p.radius) + 1));
}

template <class T> Outcome verify(const Case& c, const LightweightParams& p) {
  const CaseTensors tensors(c, p.seed);
  const Sequence<T> x = tensors.get<T, 2>("input", {p.channels, p.length});
  const Matrix<T> logits = tensors.get<T, 2>("kernel_logits", {p.heads, 2 * p.radius + 1});
  const std::size_t k = p.radius, l = p.length, taps = 2 * k + 1, left = left_padding(p), right = taps - 1 - left;
  // fairseq's optional bias (C): added after the convolution, and by the attention as its output bias.
  const Vector<T> b = p.conv_bias ? tensors.get<T, 1>("conv_bias", {p.channels}) : Vector<T>(xt::zeros<T>({p.channels}));
  const auto with_bias = [&](Sequence<T> y) {
    for (std::size_t c = 0; c < p.channels; ++c)
      for (std::size_t i = 0; i < l; ++i) y(c, i) += b(c);
    return y;
  };
  const RelativeBias<T> beta = window_bias(logits, p.length, p.outside, left);
  const Sequence<T> attention = with_bias(relative_bias_attention(x, beta, p.layout));
  const Sequence<T> conv = with_bias(lightweight_conv1d(x, logits, p.layout, left));

  const auto columns = [](const Sequence<T>& s, std::size_t from, std::size_t to) {
    return Sequence<T>(xt::view(s, xt::all(), xt::range(from, to)));
  };
  // The interior: left <= i < L - right (k <= i < L - k; causal: K - 1 <= i < L).
  const Difference interior = compare(columns(attention, left, l - right), columns(conv, left, l - right));
  double band = 0;  // max |attention - conv| over the end bands
  if (left > 0) band = compare(columns(attention, 0, left), columns(conv, 0, left)).max_abs;
  if (right > 0) band = std::max(band, compare(columns(attention, l - right, l), columns(conv, l - right, l)).max_abs);
  // The convolution's weight on padded zeros at the first and last token (the
  // most of any end-band token), and the attention's mass outside the window.
  const Matrix<T> kernel = softmax_rows(logits);
  double padded_weight = 0, outside_mass = 0, centre_outside_mass = 0;
  for (std::size_t h = 0; h < p.heads; ++h) {
    double before = 0, after = 0;
    for (std::size_t t = 0; t < left; ++t) before += double(kernel(h, t));
    for (std::size_t t = left + 1; t < taps; ++t) after += double(kernel(h, t));
    padded_weight = std::max({padded_weight, before, after});
    for (std::size_t i = 0; i < l; ++i) {
      const Vector<T> row = relative_bias_row(beta, h, i);
      double mass = 0;
      for (std::size_t j = 0; j < l; ++j) {
        const double delta = double(j) - double(i);
        if (delta < -double(left) || delta > double(right)) mass += double(row(j));
      }
      outside_mass = std::max(outside_mass, mass);
      if (i == l / 2) centre_outside_mass = std::max(centre_outside_mass, mass);
    }
  }
  // Round-off (first order, gamma_n = n u): each side's softmax weights err by
  // gamma_{2k+4} relative (subtraction, exp, the 2k + 1 term sum, division) and
  // its weighted sum of 2k + 1 values by gamma_{2k+1} sum_t p_t |x| <= gamma_{2k+1} max|x|,
  // so the two differ by at most 2 gamma_{4k+5} max|x| on the interior; the
  // bias adds one rounding of at most u (max|x| + max|b|) to each side.
  const double u = std::numeric_limits<T>::epsilon() / 2;
  const double x_max = double(xt::amax(xt::abs(xt::cast<double>(x)))());
  const double b_max = double(xt::amax(xt::abs(xt::cast<double>(b)))());
  const double roundoff = 2 * double(4 * k + 5) * u * x_max + (p.conv_bias ? 2 * u * (x_max + b_max) : 0.0);

  Outcome out;
  set_distance(out, interior);
  out.set(metric::bias, p.outside == BiasOutsideWindow::clipped ? "clipped" : "masked");
  out.set(metric::roundoff_allowance, roundoff);
  out.set(metric::fairseq_class, class_name(p.layout));
  out.set(metric::padding_l, left);
  if (p.padding == Padding1d::same)
    out.set(metric::class_difference, compare(lightweight_conv1d(x, logits, HeadLayout::contiguous, left),
                                              lightweight_conv1d(x, logits, HeadLayout::interleaved, left))
                                          .max_abs);
  out.set(metric::end_band_tokens, left + right);
  out.set(metric::end_band_max_abs, band);
  out.set(metric::end_band_padded_weight, padded_weight);
  out.set(metric::outside_mass, outside_mass);
  out.set(metric::centre_outside_mass, centre_outside_mass);
  out.default_tolerance = tolerance({{metric::max_abs, roundoff}});
  if (p.outside == BiasOutsideWindow::clipped)
    out.predicted_failure = PredictedFailure{
        metric::outside_mass.name, 0.0, double(l) * u,
        "a finite bias outside the window gives every token of the sequence a positive weight, which a kernel of 2k + 1 "
        "taps does not have"};
  vacuous_if_zero(out, "the input", x, p.conv_bias ? "the bias" : "0");
  out.tensors = {{"input", xt::xarray<T>(x)},
                 {"expected", xt::xarray<T>(conv)},
                 {"actual", xt::xarray<T>(attention)},
                 {"kernel_logits", xt::xarray<T>(logits)},
                 {"conv_bias", xt::xarray<T>(b)}};
  return out;
}

using P = LightweightParams;
const bool registered = register_proof(make_proof<P>({
    .id = "chang2021.relative_position_lightweight_conv",
    .paper = "Chang, Xu, Xu & Tu, Convolutions and Self-Attention: Re-interpreting Relative Positions in Pre-trained "
             "Language Models, ACL 2021 (lightweight convolution: Wu et al., ICLR 2019)",
    .statement =
        "On a sequence, self-attention with W_qry = W_key = 0, the values the input and a relative position "
        "bias beta_h(j - i) = -inf outside the window [-k, k] (causal: [-(K - 1), 0]) is, on the tokens away from "
        "the padding, the lightweight convolution whose kernel is softmax(beta_h) on the window (depthwise, shared per "
        "head as fairseq's LightweightConv1dTBC or LightweightConv1d splits the channels, zero padding); with a finite "
        "bias outside the window (clipped relative positions) it is not.",
    .params = {field(&P::length, size_param("length", "L, the number of tokens", 4096)),
               field(&P::channels, size_param("channels", "C, split evenly between the heads", 4096)),
               field(&P::heads, size_param("heads", "N_h", 4096)),
               field(&P::radius,
                     {.name = "radius", .help = "k: the window [-k, k], 2k + 1 taps", .minimum = 0, .maximum = 4096}),
               field(&P::outside,
                     {.name = "bias",
                      .help = "outside the window: \"masked\" (-inf, the claim) or \"clipped\" (beta(delta) = "
                              "beta(clip(delta, -k, k)), Shaw et al. 2018; \"expect\": \"fail\")",
                      .default_value = BiasOutsideWindow::masked,
                      .named = {{"masked", BiasOutsideWindow::masked}, {"clipped", BiasOutsideWindow::clipped}}}),
               field(&P::layout,
                     {.name = "class",
                      .help = "fairseq's class: \"LightweightConv1dTBC\" (head h = c // (C / N_h), contiguous; what "
                              "fairseq's models use) or \"LightweightConv1d\" (h = c mod N_h, interleaved)",
                      .default_value = HeadLayout::contiguous,
                      .named = {{"LightweightConv1dTBC", HeadLayout::contiguous},
                                {"LightweightConv1d", HeadLayout::interleaved}}}),
               field(&P::padding,
                     {.name = "padding",
                      .help = "\"same\" (padding_l = k, both sides) or \"causal\" (padding_l = K - 1, as fairseq's "
                              "decoders; LightweightConv1dTBC)",
                      .default_value = Padding1d::same,
                      .named = {{"same", Padding1d::same}, {"causal", Padding1d::causal}}}),
               field(&P::conv_bias, {.name = "conv_bias",
                                     .help = "fairseq's bias=True: a bias per channel (weights.conv_bias, (C))",
                                     .default_value = false}),
               field(&P::dtype, dtype_param()), field(&P::seed, seed_param())},
    .tensors = {"input", "kernel_logits", "conv_bias"},
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics =
        distance_metrics("the attention against the lightweight convolution on the interior padding_l <= i < L - "
                         "(K - 1 - padding_l)",
                         {metric::bias, metric::fairseq_class, metric::padding_l, metric::class_difference, metric::roundoff_allowance, metric::end_band_tokens, metric::end_band_max_abs,
                          metric::end_band_padded_weight, metric::outside_mass, metric::centre_outside_mass}),
    .dumps = {{"input", "(C, L)"},
               {"kernel_logits", "(N_h, 2k + 1)"},
               {"expected", "the lightweight convolution"},
               {"actual", "the relative-position attention"},
               {"conv_bias", "(C): the bias (zeros without conv_bias)"}},
    .memory_estimate = memory_estimate,
    .expected_tensors = expected_tensors,
}));

}  // namespace
}  // namespace attnconv
