// Liu et al., "Swin Transformer: Hierarchical Vision Transformer using Shifted
// Windows", ICCV 2021: attention inside non-overlapping M x M windows of the
// image padded bottom/right to a multiple of M, a relative position bias table
// ((2M - 1)^2, heads), and the cyclic shift by M // 2 with Swin's -100 mask
// (src/local/window_attention.hpp). Checked (docs/design.md, "Local attention"):
//  1. Han et al. (ICLR 2022): window attention is a locally connected layer whose
//     per-pixel weights are the attention map, shared by the channels of a head
//     (random content terms and table; both W-MSA and SW-MSA): round-off;
//  2. with Cordonnier's quadratic bias (no content terms, heads = K^2) it is the K x K
//     convolution on the pixels whose K x K neighbourhood lies inside their window
//     (predicted per pixel, measured against the finite-alpha bound over the window),
//     and not on the others: the fraction expressed, the error in the band, for
//     W-MSA and SW-MSA, and the pixels neither expresses.
#include <algorithm>
#include <cmath>
#include <xtensor/xview.hpp>

#include "construction/theorem1_check.hpp"
#include "local/window_attention.hpp"
#include "local_common.hpp"
#include "metrics/compare.hpp"
#include "ops/padding.hpp"
#include "proof/case_tensors.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"
#include "proof/vacuous.hpp"
#include "theorem1_common.hpp"

namespace attnconv {
namespace metric {
namespace {
const Metric han_allowance{.name = "han_allowance", .help = "check 1: the round-off allowance"};
const Metric whole_max_abs{.name = "whole_max_abs",
                           .help = "W-MSA with the quadratic bias against the convolution, every pixel"};
const Metric shift{.name = "shift", .type = MetricType::integer, .help = "SW-MSA's cyclic shift M // 2"};
const Metric expressed_max_abs{.name = "expressed_max_abs",
                               .help = "check 2: the error on the pixels predicted expressed (W-MSA and SW-MSA)",
                               .error = true};
const Metric expressed_fraction{.name = "expressed_fraction", .help = "W-MSA: fraction of pixels within the bound"};
const Metric expressed_fraction_predicted{.name = "expressed_fraction_predicted",
                                          .help = "W-MSA: fraction whose K x K neighbourhood lies inside their window"};
const Metric shifted_expressed_fraction{.name = "shifted_expressed_fraction",
                                        .help = "SW-MSA: fraction within the bound"};
const Metric shifted_expressed_fraction_predicted{.name = "shifted_expressed_fraction_predicted",
                                                  .help = "SW-MSA: fraction predicted"};
const Metric shifted_band_max_abs{.name = "shifted_band_max_abs", .help = "SW-MSA: the error in its band"};
const Metric coverage_exceptions{
    .name = "coverage_exceptions",
    .type = MetricType::integer,
    .help = "pixels where measured agreement differs from the prediction (W-MSA, SW-MSA, neither)",
    .error = true};
const Metric pixels_expressed_by_neither{.name = "pixels_expressed_by_neither",
                                         .type = MetricType::integer,
                                         .help = "pixels neither W-MSA nor SW-MSA expresses"};
const Metric pixels_expressed_by_neither_predicted{
    .name = "pixels_expressed_by_neither_predicted", .type = MetricType::integer, .help = "the same, predicted"};
}  // namespace
}  // namespace metric

namespace {

struct SwinParams {
  ConvShape shape;
  int window = 0;
  std::array<int, 2> padded{};  // Hp, Wp
  Theorem1Shared shared;
  Dtype dtype = Dtype::float64;
};

void check(SwinParams& p, const Case&, const Request&) {
  const int kernel = square_odd_kernel(p.shape);
  if (p.window < kernel)
    throw ParamError("window", "the window M = " + std::to_string(p.window) + " must be at least the kernel " +
                                   std::to_string(kernel) + " for any pixel's neighbourhood to fit in it");
  for (std::size_t axis = 0; axis < 2; ++axis)
    p.padded[axis] = (p.shape.image[axis] + p.window - 1) / p.window * p.window;
}

TensorShapes expected_tensors(const SwinParams& p) {
  const std::size_t c_in = p.shape.in_channels, k = std::size_t(p.shape.kernel[0]);
  const std::size_t heads = k * k, m = std::size_t(p.window);
  TensorShapes shapes = local_conv_tensor_shapes(p.shape, p.shared.bias);
  shapes["w_qry"] = shapes["w_key"] = {heads, c_in, c_in};
  shapes["table"] = {(2 * m - 1) * (2 * m - 1), heads};
  return shapes;
}

// Along one axis: does the neighbourhood [i - r, i + r] of pixel i lie in i's
// window of the map rolled by -shift (Lp = padded length), in one mask region,
// without wrapping around?
bool inside_window(int i, int r, int padded, int window, int shift) {
  const auto rolled = [&](int n) { return ((n - shift) % padded + padded) % padded; };
  const auto region = [&](int t) { return t < padded - window ? 0 : t < padded - shift ? 1 : 2; };
  const int home = rolled(i);
  for (int n = i - r; n <= i + r; ++n) {
    if (n < 0 || n >= padded) return false;
    const int t = rolled(n);
    if (t / window != home / window || (shift > 0 && region(t) != region(home)) || t - home != n - i) return false;
  }
  return true;
}

// rpb_h at Swin's index of (query - key) = -delta: -alpha |delta - Delta_h|^2.
template <class T> Matrix<T> construction_table(int window, int kernel, double alpha) {
  const int span = 2 * window - 1, heads = kernel * kernel;
  Matrix<T> table({std::size_t(span * span), std::size_t(heads)});
  for (int e1 = 0; e1 < span; ++e1)
    for (int e2 = 0; e2 < span; ++e2)
      for (int h = 0; h < heads; ++h) {
        const std::array<int, 2> delta{-(e1 - window + 1), -(e2 - window + 1)};  // e = query - key + M - 1
        table(std::size_t(e1 * span + e2), std::size_t(h)) =
            T(quadratic_bias(delta, target_shift(h / kernel, h % kernel, {kernel, kernel}, {1, 1}), alpha));
      }
  return table;
}

struct Coverage {
  int predicted = 0, agree = 0, exceptions = 0;
  double band_max = 0, expressed_max = 0;
  std::vector<bool> agrees;
};

Coverage coverage(const xt::xtensor<double, 2>& diff, double threshold, int r, std::array<int, 2> padded, int window,
                  int shift) {
  Coverage cov;
  const int height = int(diff.shape(0)), width = int(diff.shape(1));
  for (int i = 0; i < height; ++i)
    for (int j = 0; j < width; ++j) {
      const bool predicted = inside_window(i, r, padded[0], window, shift) && inside_window(j, r, padded[1], window, shift);
      const double d = diff(std::size_t(i), std::size_t(j));
      const bool agrees = d <= threshold;
      cov.predicted += predicted;
      cov.agree += agrees;
      cov.exceptions += predicted != agrees;
      cov.agrees.push_back(agrees);
      double& worst = predicted ? cov.expressed_max : cov.band_max;
      worst = std::isnan(d) ? d : std::max(worst, d);
    }
  return cov;
}

template <class T> Outcome verify(const Case& c, const SwinParams& p) {
  const std::size_t c_in = p.shape.in_channels;
  const int height = p.shape.image[0], width = p.shape.image[1], kernel = p.shape.kernel[0], m = p.window;
  const int shift = m / 2, r = kernel / 2;
  const CaseTensors tensors(c, p.shared.seed);
  const LocalConvCase<T> conv = local_conv_case<T>(tensors, p.shape, p.shared, 1);
  const Image<T>& x = conv.x;
  const Image<T>& expected = conv.expected;
  const Theorem1Options& options = conv.options;
  const MhsaLayer<T>& layer = conv.layer;
  const Image<T> x_pad = pad(x, Padding{0, p.padded[0] - height, 0, p.padded[1] - width}, PaddingMode::zeros);
  const HeadMaps<T> values = head_values(layer, x_pad);
  const std::size_t heads = values.shape(0);
  const auto crop = [&](const Image<T>& y) -> Image<T> {
    return xt::view(y, xt::all(), xt::range(0, height), xt::range(0, width));
  };

  // 1. Han et al.'s rewrite, with random content terms and a random table.
  const xt::xtensor<T, 3> w_qry = tensors.get<T, 3>("w_qry", {heads, c_in, c_in});
  const xt::xtensor<T, 3> w_key = tensors.get<T, 3>("w_key", {heads, c_in, c_in});
  const Matrix<T> random_table = tensors.get<T, 2>("table", {std::size_t((2 * m - 1) * (2 * m - 1)), heads});
  const ContentMaps<T> content = content_maps(x_pad, w_qry, w_key);
  const HeadMaps<T>&q = content.q, &k = content.k;
  double han_max_abs = 0, han_rel_l2 = 0;  // the larger over W-MSA and SW-MSA
  std::vector<NamedTensor> han_sides;
  for (const int s : {0, shift}) {
    const HeadMaps<T> windowed = swin_window_attention(q, k, values, random_table, m, s);
    const HeadMaps<T> connected = locally_connected(swin_attention_weights(q, k, random_table, m, s), values);
    const std::string suffix = s == 0 ? "" : "_shifted";
    han_sides.push_back({"han_windowed" + suffix, xt::xarray<T>(windowed)});
    han_sides.push_back({"han_connected" + suffix, xt::xarray<T>(connected)});
    const Difference d = compare(connected, windowed);
    han_max_abs = std::max(han_max_abs, d.max_abs), han_rel_l2 = std::max(han_rel_l2, d.rel_l2);
  }
  const double v_max = double(xt::amax(xt::abs(values))());
  const double han_allowance =
      softmax_roundoff(0, double(m * m), std::numeric_limits<T>::epsilon() / 2, 0, v_max, v_max);

  // 2. The quadratic bias: W-MSA and SW-MSA against the convolution.
  const Matrix<T> table = construction_table<T>(m, kernel, options.alpha);
  const HeadMaps<T> zero = xt::zeros<T>({heads, x_pad.shape(1), x_pad.shape(2), std::size_t(1)});
  const Image<T> w_msa = crop(project_heads(layer, swin_window_attention(zero, zero, values, table, m, 0)));
  const Image<T> sw_msa = crop(project_heads(layer, swin_window_attention(zero, zero, values, table, m, shift)));
  const FiniteAlphaBound bound = construction_bound(layer, image_to_tokens(x_pad), std::size_t(m), std::size_t(m),
                                                    {kernel, kernel}, options);
  const double threshold = bound(options.alpha);
  const Coverage plain = coverage(pixel_difference(w_msa, expected), threshold, r, p.padded, m, 0);
  const Coverage shifted = coverage(pixel_difference(sw_msa, expected), threshold, r, p.padded, m, shift);
  int neither = 0, neither_predicted = 0;
  for (int i = 0; i < height; ++i)
    for (int j = 0; j < width; ++j) {
      const std::size_t n = std::size_t(i * width + j);
      neither += !plain.agrees[n] && !shifted.agrees[n];
      neither_predicted += !(inside_window(i, r, p.padded[0], m, 0) && inside_window(j, r, p.padded[1], m, 0)) &&
                           !(inside_window(i, r, p.padded[0], m, shift) && inside_window(j, r, p.padded[1], m, shift));
    }
  const double pixels = double(height) * width;
  const Difference whole = compare(w_msa, expected);

  Outcome out;
  out.set(metric::max_abs, han_max_abs);
  out.set(metric::rel_l2, han_rel_l2);
  out.set(metric::han_allowance, han_allowance);
  out.set(metric::whole_max_abs, whole.max_abs);
  out.set(metric::bound, threshold);
  out.set(metric::alpha, options.alpha);
  out.set(metric::shift, shift);
  out.set(metric::expressed_max_abs, std::max(plain.expressed_max, shifted.expressed_max));
  out.set(metric::expressed_fraction, plain.agree / pixels);
  out.set(metric::expressed_fraction_predicted, plain.predicted / pixels);
  out.set(metric::band_max_abs, plain.band_max);
  out.set(metric::shifted_expressed_fraction, shifted.agree / pixels);
  out.set(metric::shifted_expressed_fraction_predicted, shifted.predicted / pixels);
  out.set(metric::shifted_band_max_abs, shifted.band_max);
  out.set(metric::coverage_exceptions, plain.exceptions + shifted.exceptions + std::abs(neither - neither_predicted));
  out.set(metric::pixels_expressed_by_neither, neither);
  out.set(metric::pixels_expressed_by_neither_predicted, neither_predicted);
  out.default_tolerance = tolerance(
      {{metric::max_abs, han_allowance}, {metric::expressed_max_abs, threshold}, {metric::coverage_exceptions, 0}});
  out.roundoff_tolerance = tolerance({{metric::max_abs, han_allowance},
                                      {metric::expressed_max_abs, bound.roundoff(options.alpha)},
                                      {metric::coverage_exceptions, 0}});
  out.message = "W-MSA is within the finite-alpha bound of the convolution on " + std::to_string(plain.agree) + " of " +
                std::to_string(height * width) + " pixels (" + std::to_string(plain.predicted) +
                " predicted: their K x K neighbourhood lies inside their window), SW-MSA on " +
                std::to_string(shifted.agree) + " (" + std::to_string(shifted.predicted) + " predicted); " +
                (neither > 0 ? std::to_string(neither) + " pixels are expressed by neither (so W-MSA then SW-MSA, "
                                                         "each built this way, does not give the convolution on every pixel)"
                             : std::string("every pixel is within the bound for one of them")) +
                "; max_abs is check 1 (Han et al.'s rewrite), whole_max_abs W-MSA against the convolution over the "
                "whole image";
  vacuous_if_zero(out, "the input", x, "the bias");
  vacuous_if_zero(out, "conv_weight (the convolution, and so the layer's values)", conv.w, "the bias");
  out.tensors = conv_tensors<T>(x, expected, w_msa, conv.w, conv.b);
  out.tensors.push_back({"actual_shifted", xt::xarray<T>(sw_msa)});
  out.tensors.push_back({"table", xt::xarray<T>(table)});
  out.tensors.push_back({"random_table", xt::xarray<T>(random_table)});
  out.tensors.push_back({"w_qry", xt::xarray<T>(w_qry)});
  out.tensors.push_back({"w_key", xt::xarray<T>(w_key)});
  for (auto& t : han_sides) out.tensors.push_back(std::move(t));
  for (auto& t : head_weight_tensors(layer)) out.tensors.push_back(std::move(t));
  return out;
}

using P = SwinParams;
const bool registered = register_proof(make_proof<P>({
    .id = "liu2021.swin_window_attention",
    .paper =
        "Liu et al., Swin Transformer: Hierarchical Vision Transformer using Shifted Windows, ICCV 2021 (its public "
        "code's window attention); Han et al., On the Connection between Local Attention and Dynamic Depth-wise "
        "Convolution, ICLR 2022",
    .statement = "Window attention is a locally connected layer whose per-pixel weights are the attention map, shared "
                 "by the channels of a head (Han et al.); with Cordonnier's quadratic bias and no content terms it is "
                 "the K x K zero-padded convolution exactly on the pixels whose K x K neighbourhood lies inside their "
                 "(shifted) window, and on no other.",
    .params =
        {nested(&P::shape,
                conv_shape({.kernel_help = "convolution kernel K (odd, square); heads = K^2, head_dim = out_channels",
                            .in_help = "D_in",
                            .out_help = "D_out",
                            .groups = false})),
         field(&P::window, {.name = "window", .help = "window M (>= K); shift M // 2", .minimum = 1, .maximum = 64}),
         nested(&P::shared, theorem1_shared()), field(&P::dtype, dtype_param())},
    .retired = {{"engine", "windows"}},
    .tensors = {"input", "conv_weight", "conv_bias", "w_qry", "w_key", "table"},
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = distance_metrics(
        "check 1: Han et al.'s locally connected form against window attention (the larger "
        "over W-MSA and SW-MSA)",
        {metric::han_allowance, metric::whole_max_abs,
         metric::bound.described("the finite-alpha bound over the M x M window: agreement per pixel"), metric::alpha,
         metric::shift, metric::expressed_max_abs, metric::expressed_fraction, metric::expressed_fraction_predicted,
         metric::band_max_abs.described("W-MSA: the error on the other pixels (the band)"),
         metric::shifted_expressed_fraction, metric::shifted_expressed_fraction_predicted, metric::shifted_band_max_abs,
         metric::coverage_exceptions, metric::pixels_expressed_by_neither,
         metric::pixels_expressed_by_neither_predicted}),
    .dumps = conv_dumps("the convolution, (C_out, H, W)", "W-MSA with the quadratic bias",
                         {{"actual_shifted", "SW-MSA"},
                          {"table", "((2M - 1)^2, heads): the quadratic bias"},
                          {"random_table", "((2M - 1)^2, heads): the bias of the locally connected check"},
                          {"w_qry", "(heads, C_in, C_in): the locally connected check's layer"},
                          {"w_key", "(heads, C_in, C_in)"},
                          {"han_windowed", "(heads, H_p, W_p, C_out): check 1, W-MSA per head with w_qry, w_key, "
                                           "random_table on the input padded bottom/right to H_p, W_p (multiples of M)"},
                          {"han_connected", "the same as a locally connected layer (Han et al.): the side max_abs "
                                            "compares with han_windowed"},
                          {"han_windowed_shifted", "check 1 for SW-MSA (shift M // 2)"},
                          {"han_connected_shifted", "check 1 for SW-MSA, locally connected"},
                          {"w_val", "(heads, C_in, C_out): the construction's W_val^h, the values of checks 1 and 2"},
                          {"w_out", "(heads C_out, C_out): W_out, head h's rows h C_out ... (h + 1) C_out - 1"},
                          {"b_out", "(C_out): the convolution's bias"}}),
    .expected_tensors = expected_tensors,
}));

}  // namespace
}  // namespace attnconv
