// Liu et al., "Swin Transformer: Hierarchical Vision Transformer using Shifted
// Windows", ICCV 2021: attention inside non-overlapping M x M windows of the
// image padded bottom/right to a multiple of M (the detection repository; or
// the classification repository's rule: when min(H, W) <= M the shift is off and
// the window is the image), M = [M1, M2] possibly rectangular, a relative position
// bias table ((2 M1 - 1)(2 M2 - 1), heads), the cyclic shift by M // 2 with Swin's
// -100 mask, and qkv_bias (Swin's default)
// (src/local/window_attention.hpp). Checked (docs/design.md, "Local attention"):
//  1. Han et al. (ICLR 2022): window attention is a locally connected layer whose
//     per-pixel weights are the attention map, shared by the channels of a head
//     (random content terms, qkv biases and table; both W-MSA and SW-MSA): round-off;
//  1b. with qkv_bias, in the construction: q and k biases add one constant to a
//     query's scores (round-off), and the v bias is a constant an adjusted output
//     bias b_out - concat_h(b_val^h) W_out absorbs (round-off);
//  2. with Cordonnier's quadratic bias (no content terms, heads = K^2) it is the K x K
//     convolution on the pixels whose K x K neighbourhood lies inside their window
//     (predicted per pixel, src/local/window_coverage.hpp, measured against the
//     finite-alpha bound over the window),
//     and not on the others: the fraction expressed, the error in the band, for
//     W-MSA and SW-MSA, and the pixels neither expresses.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>
#include <xtensor/xview.hpp>

#include "construction/theorem1_check.hpp"
#include "io/errors.hpp"
#include "io/quote.hpp"
#include "local/window_attention.hpp"
#include "local/window_coverage.hpp"
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
const Metric shift{.name = "shift", .type = MetricType::array, .help = "SW-MSA's cyclic shift [s1, s2] (M // 2; 0 under the small-image rule)"};
const Metric window_used{.name = "window_used", .type = MetricType::array, .help = "the window [M1, M2] the layer uses (the image under the small-image rule)"};
const Metric qk_bias_max_abs{.name = "qk_bias_max_abs",
                             .help = "check 1b: the construction's heads with random q and k biases against none "
                                     "(W-MSA and SW-MSA); with qkv_bias",
                             .always = false,
                             .error = true};
const Metric qk_bias_allowance{.name = "qk_bias_allowance", .help = "its round-off allowance", .always = false};
const Metric v_bias_max_abs{.name = "v_bias_max_abs",
                            .help = "check 1b: the layer with a v bias and b_out - concat(b_val) W_out against the "
                                    "layer without (W-MSA and SW-MSA); with qkv_bias",
                            .always = false,
                            .error = true};
const Metric v_bias_allowance{.name = "v_bias_allowance", .help = "its round-off allowance", .always = false};
const Metric rule_difference{.name = "rule_difference",
                             .help = "small_image \"window_is_image\" on an image with min(H, W) <= M: the largest "
                                     "|SW-MSA - SW-MSA of the detection repository's padding| (the second block)",
                             .always = false};
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

// What a Swin block does with an image whose side is at most its window.
enum class SmallImage {
  pad,              // Swin-Transformer-Object-Detection: pad to a multiple of M, shift M // 2
  window_is_image,  // Swin-Transformer (classification): min(H, W) <= M -> shift 0, window min(H, W)
};

struct SwinParams {
  ConvShape shape;
  Extent2 window{};  // [M1, M2] as given
  bool qkv_bias = true;
  SmallImage small_image = SmallImage::pad;
  Theorem1Shared shared;
  Dtype dtype = Dtype::float64;
  // From check: the window and SW-MSA shift the layer uses, and the padded map.
  Extent2 used{}, shift{};
  std::array<int, 2> padded{};  // Hp, Wp
  bool rule_applies = false;    // window_is_image on an image with min(H, W) <= M
};

std::array<int, 2> padded_to(std::array<int, 2> image, Extent2 window) {
  return {(image[0] + window[0] - 1) / window[0] * window[0], (image[1] + window[1] - 1) / window[1] * window[1]};
}

std::string extent(Extent2 e) { return std::to_string(e[0]) + " x " + std::to_string(e[1]); }

void check(SwinParams& p, const Case& c, const Request&) {
  if (has_case_tensor(c, "table"))
    throw InputError(c.file + ": case '" + clip(c.name) +
                     "': key 'weights.table': this tensor is now named 'weights.random_table' (the random bias table "
                     "of check 1, Han et al.'s rewrite; the construction's table is computed, never loaded): rename it");
  if (!p.qkv_bias)
    for (const char* key : {"b_qry", "b_key", "b_val"})
      if (has_case_tensor(c, key))
        throw ParamError("qkv_bias", std::string("the case loads weights.") + key + ", which \"qkv_bias\": false leaves unused");
  const int kernel = square_odd_kernel(p.shape);
  if (std::min(p.window[0], p.window[1]) < kernel)
    throw ParamError("window", "the window M = " + extent(p.window) + " must be at least the kernel " +
                                   std::to_string(kernel) + " per axis for any pixel's neighbourhood to fit in it");
  const std::array<int, 2> image = p.shape.image;
  p.used = p.window;
  p.shift = {p.window[0] / 2, p.window[1] / 2};
  if (p.small_image == SmallImage::window_is_image) {
    if (p.window[0] != p.window[1])
      throw ParamError("small_image", "\"window_is_image\" is the rule of Swin-Transformer's SwinTransformerBlock, "
                                      "whose window is square: give \"window\" as one number");
    const int side = std::min(image[0], image[1]);
    if (side <= p.window[0]) p.used = {side, side}, p.shift = {0, 0}, p.rule_applies = true;
    if (image[0] % p.used[0] != 0 || image[1] % p.used[1] != 0)
      throw ParamError("image", "Swin-Transformer's classification code does not pad: with \"small_image\": "
                                "\"window_is_image\" the image must be a multiple of the window " + extent(p.used));
  }
  p.padded = padded_to(image, p.used);
}

std::size_t table_rows(Extent2 m) { return std::size_t((2 * m[0] - 1) * (2 * m[1] - 1)); }

TensorShapes expected_tensors(const SwinParams& p) {
  const std::size_t c_in = p.shape.in_channels, c_out = p.shape.out_channels, k = std::size_t(p.shape.kernel[0]);
  const std::size_t heads = k * k;
  TensorShapes shapes = local_conv_tensor_shapes(p.shape, p.shared.bias);
  shapes["w_qry"] = shapes["w_key"] = {heads, c_in, c_in};
  shapes["random_table"] = {table_rows(p.used), heads};
  if (p.qkv_bias) {
    shapes["b_qry"] = shapes["b_key"] = {heads, c_in};
    shapes["b_val"] = {heads, c_out};
  }
  return shapes;
}

// rpb_h at Swin's index of (query - key) = -delta: -alpha |delta - Delta_h|^2.
template <class T> Matrix<T> construction_table(Extent2 window, int kernel, double alpha) {
  const int span2 = 2 * window[1] - 1, heads = kernel * kernel;
  Matrix<T> table({table_rows(window), std::size_t(heads)});
  for (int e1 = 0; e1 < 2 * window[0] - 1; ++e1)
    for (int e2 = 0; e2 < span2; ++e2)
      for (int h = 0; h < heads; ++h) {
        const std::array<int, 2> delta{-(e1 - window[0] + 1), -(e2 - window[1] + 1)};  // e = query - key + M - 1
        table(std::size_t(e1 * span2 + e2), std::size_t(h)) =
            T(quadratic_bias(delta, target_shift(h / kernel, h % kernel, {kernel, kernel}, {1, 1}), alpha));
      }
  return table;
}

struct Coverage {
  int predicted = 0, agree = 0, exceptions = 0;
  double band_max = 0, expressed_max = 0;
  std::vector<bool> agrees, expressed;  // measured, predicted per pixel
};

Coverage coverage(const xt::xtensor<double, 2>& diff, double threshold, const SwinParams& p, Extent2 shift) {
  Coverage cov;
  for (int i = 0; i < p.shape.image[0]; ++i)
    for (int j = 0; j < p.shape.image[1]; ++j) {
      const bool predicted = swin_pixel_expressed({i, j}, p.shape.image, p.padded, p.used, shift, p.shape.kernel[0]);
      const double d = diff(std::size_t(i), std::size_t(j));
      const bool agrees = d <= threshold;
      cov.predicted += predicted;
      cov.agree += agrees;
      cov.exceptions += predicted != agrees;
      cov.agrees.push_back(agrees);
      cov.expressed.push_back(predicted);
      double& worst = predicted ? cov.expressed_max : cov.band_max;
      worst = std::isnan(d) ? d : std::max(worst, d);
    }
  return cov;
}

// maps + b[h] at every pixel: Swin's qkv bias of one of q, k, v (heads, D).
template <class T> HeadMaps<T> plus_bias(HeadMaps<T> maps, const Matrix<T>& b) {
  for (std::size_t h = 0; h < maps.shape(0); ++h)
    for (std::size_t i = 0; i < maps.shape(1); ++i)
      for (std::size_t j = 0; j < maps.shape(2); ++j)
        for (std::size_t d = 0; d < maps.shape(3); ++d) maps(h, i, j, d) += b(h, d);
  return maps;
}

// The largest column sum sum_j |W_out(j, o)|: how much W_out can enlarge a head-level difference.
template <class T> double column_sum(const Matrix<T>& w) {
  double top = 0;
  for (std::size_t o = 0; o < w.shape(1); ++o) {
    double sum = 0;
    for (std::size_t j = 0; j < w.shape(0); ++j) sum += std::abs(double(w(j, o)));
    top = std::max(top, sum);
  }
  return top;
}

template <class T> double largest(const T& t) { return t.size() == 0 ? 0.0 : double(xt::amax(xt::abs(t))()); }

// Bytes at the peak, s bytes an element, K^2 heads of dim C_out on the padded map (n = Hp Wp pixels),
// windows of M1 M2 pixels: the per-head maps (heads x pixels x dim, local/head_tensor.hpp: the values,
// the biased values, Han's windowed and locally connected sides of both shifts (kept for the dumps),
// W-MSA's and SW-MSA's heads and the qkv-bias check's, about 14 K^2 n C_out; the content queries and
// keys with and without their bias and the bias check's constant ones, 8 K^2 n C_in), per-query
// attention weights (2 K^2 n M1 M2), the layer and the content weights (K^2 (C_in C_out + C_out^2 +
// 2 C_in^2)) and the images and their copies (10 n (C_in + C_out)). Measured: 154 MiB at 56x56, K 5,
// M 7, C 8 (estimate 1.2x).
double memory_estimate(const Case&, const SwinParams& p) {
  const double s = double(dtype_bytes(p.dtype)), heads = double(p.shape.kernel[0]) * p.shape.kernel[1];
  const double c_in = double(p.shape.in_channels), c_out = double(p.shape.out_channels);
  const double n = double(p.padded[0]) * double(p.padded[1]), window = double(p.used[0]) * double(p.used[1]);
  const double maps = heads * n * (14 * c_out + 8 * c_in + 2 * window);
  const double layers = heads * (c_in * c_out + c_out * c_out + 2 * c_in * c_in);
  return process_bytes + s * (maps + layers + 10 * n * (c_in + c_out));
}

template <class T> Outcome verify(const Case& c, const SwinParams& p) {
  const std::size_t c_in = p.shape.in_channels, c_out = p.shape.out_channels;
  const int height = p.shape.image[0], width = p.shape.image[1], kernel = p.shape.kernel[0];
  const Extent2 m = p.used, no_shift{0, 0};
  const double window_size = double(m[0]) * m[1], u = std::numeric_limits<T>::epsilon() / 2;
  const CaseTensors tensors(c, p.shared.seed);
  const LocalConvCase<T> conv = local_conv_case<T>(tensors, p.shape, p.shared, 1);
  const Image<T>& x = conv.x;
  const Image<T>& expected = conv.expected;
  const Theorem1Options& options = conv.options;
  const MhsaLayer<T>& layer = conv.layer;
  const auto padded = [&](std::array<int, 2> size) {
    return pad(x, Padding{0, size[0] - height, 0, size[1] - width}, PaddingMode::zeros);
  };
  const Image<T> x_pad = padded(p.padded);
  const HeadMaps<T> values = head_values(layer, x_pad);
  const std::size_t heads = values.shape(0);
  const auto crop = [&](const Image<T>& y) -> Image<T> {
    return xt::view(y, xt::all(), xt::range(0, height), xt::range(0, width));
  };
  // Swin's qkv bias (b_qry, b_key (heads, C_in), b_val (heads, D_h)); zero without qkv_bias.
  const auto qkv_bias = [&](const char* key, std::size_t dim) -> Matrix<T> {
    return p.qkv_bias ? tensors.get<T, 2>(key, {heads, dim}) : Matrix<T>(xt::zeros<T>({heads, dim}));
  };
  const Matrix<T> b_qry = qkv_bias("b_qry", c_in), b_key = qkv_bias("b_key", c_in), b_val = qkv_bias("b_val", c_out);

  // 1. Han et al.'s rewrite, with random content terms, qkv biases and a random table.
  const xt::xtensor<T, 3> w_qry = tensors.get<T, 3>("w_qry", {heads, c_in, c_in});
  const xt::xtensor<T, 3> w_key = tensors.get<T, 3>("w_key", {heads, c_in, c_in});
  const Matrix<T> random_table = tensors.get<T, 2>("random_table", {table_rows(m), heads});
  const ContentMaps<T> content = content_maps(x_pad, w_qry, w_key);
  const HeadMaps<T> q = plus_bias(content.q, b_qry), k = plus_bias(content.k, b_key);
  const HeadMaps<T> biased_values = plus_bias(values, b_val);
  double han_max_abs = 0, han_rel_l2 = 0;  // the larger over W-MSA and SW-MSA
  std::vector<NamedTensor> han_sides;
  for (const Extent2 s : {no_shift, p.shift}) {
    const HeadMaps<T> windowed = swin_window_attention(q, k, biased_values, random_table, m, s);
    const HeadMaps<T> connected = locally_connected(swin_attention_weights(q, k, random_table, m, s), biased_values);
    const std::string suffix = s == no_shift ? "" : "_shifted";
    han_sides.push_back({"han_windowed" + suffix, xt::xarray<T>(windowed)});
    han_sides.push_back({"han_connected" + suffix, xt::xarray<T>(connected)});
    const Difference d = compare(connected, windowed);
    han_max_abs = std::max(han_max_abs, d.max_abs), han_rel_l2 = std::max(han_rel_l2, d.rel_l2);
  }
  const double v_max = largest(biased_values);
  const double han_allowance = softmax_roundoff(0, window_size, u, 0, v_max, v_max);

  // 2. The quadratic bias: W-MSA and SW-MSA against the convolution.
  const Matrix<T> table = construction_table<T>(m, kernel, options.alpha);
  const HeadMaps<T> zero = xt::zeros<T>({heads, x_pad.shape(1), x_pad.shape(2), std::size_t(1)});
  const HeadMaps<T> w_heads = swin_window_attention(zero, zero, values, table, m, no_shift);
  const HeadMaps<T> sw_heads = swin_window_attention(zero, zero, values, table, m, p.shift);
  const Image<T> w_msa = crop(project_heads(layer, w_heads));
  const Image<T> sw_msa = crop(project_heads(layer, sw_heads));
  const FiniteAlphaBound bound = construction_bound(layer, image_to_tokens(x_pad), std::size_t(m[0]),
                                                    std::size_t(m[1]), {kernel, kernel}, options);
  const double threshold = bound(options.alpha);
  const Coverage plain = coverage(pixel_difference(w_msa, expected), threshold, p, no_shift);
  const Coverage shifted = coverage(pixel_difference(sw_msa, expected), threshold, p, p.shift);
  int neither = 0, neither_predicted = 0;
  for (std::size_t n = 0; n < plain.agrees.size(); ++n) {
    neither += !plain.agrees[n] && !shifted.agrees[n];
    neither_predicted += !plain.expressed[n] && !shifted.expressed[n];
  }
  const double pixels = double(height) * width;
  const Difference whole = compare(w_msa, expected);

  // 1b. qkv_bias in the construction. q = b_qry and k = b_key at every pixel add
  // b_qry^h . b_key^h to all of a query's scores, which the softmax drops; the
  // values' b_val^h comes out of every head unchanged (its weights sum to 1, the
  // padded pixels carry it too, as Swin pads before qkv), a constant
  // concat_h(b_val^h) W_out that b_out - concat_h(b_val^h) W_out absorbs.
  // Allowances: softmax_roundoff (local_common.hpp) per head - for q and k the
  // scores' rounding with the constant added (the table reaches alpha |delta - Delta|^2),
  // for v the sums alone - the v bias's through W_out (its largest column sum)
  // and the projection's own sum.
  double qk_max_abs = 0, v_bias_max_abs = 0, qk_allowance = 0, v_allowance = 0;
  if (p.qkv_bias) {
    const HeadMaps<T> none = xt::zeros<T>({heads, x_pad.shape(1), x_pad.shape(2), c_in});
    const HeadMaps<T> q_const = plus_bias(none, b_qry), k_const = plus_bias(none, b_key);
    MhsaLayer<T> absorbed = layer;
    const std::size_t d_h = layer.head_dim();
    for (std::size_t o = 0; o < layer.out_dim(); ++o)
      for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t d = 0; d < d_h; ++d) absorbed.b_out(o) -= b_val(h, d) * layer.w_out(h * d_h + d, o);
    for (const auto& [s, reference] : {std::pair{no_shift, &w_heads}, std::pair{p.shift, &sw_heads}}) {
      qk_max_abs = std::max(qk_max_abs,
                            compare(swin_window_attention(q_const, k_const, values, table, m, s), *reference).max_abs);
      const Image<T> with_v_bias = crop(project_heads(absorbed, swin_window_attention(zero, zero, biased_values, table, m, s)));
      v_bias_max_abs = std::max(v_bias_max_abs, compare(with_v_bias, crop(project_heads(layer, *reference))).max_abs);
    }
    double qk_scale = 0;
    for (std::size_t h = 0; h < heads; ++h) {
      double sum = 0;
      for (std::size_t d = 0; d < c_in; ++d) sum += std::abs(double(b_qry(h, d)) * double(b_key(h, d)));
      qk_scale = std::max(qk_scale, sum);
    }
    const double score_scale = 2 * (largest(table) + std::abs(swin_mask_value)), v_plain = largest(values);
    qk_allowance = softmax_roundoff(double(c_in) + 4, window_size, u, score_scale + 2 * qk_scale, v_plain, v_plain);
    const double scale = std::max(v_plain, v_max), w_sum = column_sum(layer.w_out);
    // The two runs share their attention weights bit for bit (the same scores): a head's outputs differ by the
    // rounding of two sums of N terms and the weights' sum 1 + O(N u) times b_val, then W_out and b_out.
    v_allowance = softmax_roundoff(0, 2 * window_size + 2, u, 0, scale, scale) * w_sum +
                  2 * u * double(heads * d_h + 2) * (scale * w_sum + largest(layer.b_out) + largest(absorbed.b_out));
  }

  Outcome out;
  out.set(metric::max_abs, han_max_abs);
  out.set(metric::rel_l2, han_rel_l2);
  out.set(metric::han_allowance, han_allowance);
  out.set(metric::whole_max_abs, whole.max_abs);
  out.set(metric::bound, threshold);
  out.set(metric::alpha, options.alpha);
  out.set(metric::shift, json::array({p.shift[0], p.shift[1]}));
  out.set(metric::window_used, json::array({m[0], m[1]}));
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
  out.default_tolerance = tolerance({{metric::max_abs, han_allowance},
                                     {metric::expressed_max_abs, threshold},
                                     {metric::coverage_exceptions, 0}});
  out.roundoff_tolerance = tolerance({{metric::max_abs, han_allowance},
                                      {metric::expressed_max_abs, bound.roundoff(options.alpha)},
                                      {metric::coverage_exceptions, 0}});
  if (p.qkv_bias) {
    out.set(metric::qk_bias_max_abs, qk_max_abs);
    out.set(metric::qk_bias_allowance, qk_allowance);
    out.set(metric::v_bias_max_abs, v_bias_max_abs);
    out.set(metric::v_bias_allowance, v_allowance);
    for (json* limits : {&out.default_tolerance, &out.roundoff_tolerance}) {
      (*limits)[metric::qk_bias_max_abs.name] = qk_allowance;
      (*limits)[metric::v_bias_max_abs.name] = v_allowance;
    }
  }
  if (p.rule_applies) {
    // The detection repository's block on the same image: padded to a multiple of M, shifted by M // 2.
    const std::array<int, 2> size = padded_to(p.shape.image, p.window);
    const HeadMaps<T> detection_values = head_values(layer, padded(size));
    const HeadMaps<T> detection_zero = xt::zeros<T>({heads, std::size_t(size[0]), std::size_t(size[1]), std::size_t(1)});
    const Image<T> detection = crop(project_heads(
        layer, swin_window_attention(detection_zero, detection_zero, detection_values,
                                     construction_table<T>(p.window, kernel, options.alpha), p.window,
                                     Extent2{p.window[0] / 2, p.window[1] / 2})));
    out.set(metric::rule_difference, compare(sw_msa, detection).max_abs);
  }
  out.message = "W-MSA is within the finite-alpha bound of the convolution on " + std::to_string(plain.agree) + " of " +
                std::to_string(height * width) + " pixels (" + std::to_string(plain.predicted) +
                " predicted: every head lands on its tap's value), SW-MSA on " + std::to_string(shifted.agree) + " (" +
                std::to_string(shifted.predicted) + " predicted); " +
                (neither > 0 ? std::to_string(neither) + " pixels are expressed by neither (so W-MSA then SW-MSA, "
                                                         "each built this way, does not give the convolution on every pixel)"
                             : std::string("every pixel is within the bound for one of them")) +
                "; max_abs is check 1 (Han et al.'s rewrite), whole_max_abs W-MSA against the convolution over the "
                "whole image" +
                (p.rule_applies ? "; min(H, W) <= M: the classification repository's rule turns the shift off and "
                                  "makes the window the image (rule_difference: its SW-MSA against the detection "
                                  "repository's padded one)"
                                : std::string());
  vacuous_if_zero(out, "the input", x, "the bias");
  vacuous_if_zero(out, "conv_weight (the convolution, and so the layer's values)", conv.w, "the bias");
  out.tensors = conv_tensors<T>(x, expected, w_msa, conv.w, conv.b);
  out.tensors.push_back({"actual_shifted", xt::xarray<T>(sw_msa)});
  out.tensors.push_back({"table", xt::xarray<T>(table)});
  out.tensors.push_back({"random_table", xt::xarray<T>(random_table)});
  out.tensors.push_back({"w_qry", xt::xarray<T>(w_qry)});
  out.tensors.push_back({"w_key", xt::xarray<T>(w_key)});
  out.tensors.push_back({"b_qry", xt::xarray<T>(b_qry)});
  out.tensors.push_back({"b_key", xt::xarray<T>(b_key)});
  out.tensors.push_back({"b_val", xt::xarray<T>(b_val)});
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
                 "by the channels of a head (Han et al.); Swin's q and k biases change nothing in the construction "
                 "and its v bias is a constant an adjusted output bias absorbs; with Cordonnier's quadratic bias and "
                 "no content terms it is the K x K zero-padded convolution exactly on the pixels where every head "
                 "lands on its tap's value (the tap inside the (shifted) window, or a zero of the padding where the "
                 "tap is outside the image), and on no other.",
    .params =
        {nested(&P::shape,
                conv_shape({.kernel_help = "convolution kernel K (odd, square); heads = K^2, head_dim = out_channels",
                            .in_help = "D_in",
                            .out_help = "D_out",
                            .groups = false})),
         field(&P::window, {.name = "window",
                            .help = "window M or [M1, M2] (rows, columns; each >= K); shift M // 2 per axis",
                            .minimum = 1,
                            .maximum = 64}),
         field(&P::qkv_bias, {.name = "qkv_bias",
                              .help = "Swin's qkv bias b_qry, b_key, b_val (its default: true)",
                              .default_value = true}),
         field(&P::small_image,
               {.name = "small_image",
                .help = "\"pad\": pad to a multiple of M and shift (Swin-Transformer-Object-Detection); "
                        "\"window_is_image\": when min(H, W) <= M the shift is off and the window is min(H, W), no "
                        "padding (Swin-Transformer's classification SwinTransformerBlock; a square M)",
                .default_value = SmallImage::pad,
                .named = {{"pad", SmallImage::pad}, {"window_is_image", SmallImage::window_is_image}}}),
         nested(&P::shared, theorem1_shared()), field(&P::dtype, dtype_param())},
    .retired = {{"engine", "windows"}},
    .tensors = {"input", "conv_weight", "conv_bias", "w_qry", "w_key", "random_table", "b_qry", "b_key", "b_val",
                "table"},
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = distance_metrics(
        "check 1: Han et al.'s locally connected form against window attention (the larger "
        "over W-MSA and SW-MSA)",
        {metric::han_allowance, metric::whole_max_abs,
         metric::bound.described("the finite-alpha bound over the M1 x M2 window: agreement per pixel"), metric::alpha,
         metric::shift, metric::window_used, metric::qk_bias_max_abs, metric::qk_bias_allowance,
         metric::v_bias_max_abs, metric::v_bias_allowance, metric::rule_difference, metric::expressed_max_abs,
         metric::expressed_fraction, metric::expressed_fraction_predicted,
         metric::band_max_abs.described("W-MSA: the error on the other pixels (the band)"),
         metric::shifted_expressed_fraction, metric::shifted_expressed_fraction_predicted, metric::shifted_band_max_abs,
         metric::coverage_exceptions, metric::pixels_expressed_by_neither,
         metric::pixels_expressed_by_neither_predicted}),
    .dumps = conv_dumps("the convolution, (C_out, H, W)", "W-MSA with the quadratic bias",
                         {{"actual_shifted", "SW-MSA"},
                          {"table", "((2 M1 - 1)(2 M2 - 1), heads): the quadratic bias"},
                          {"random_table", "((2 M1 - 1)(2 M2 - 1), heads): the bias of the locally connected check "
                                           "(weights.random_table)"},
                          {"w_qry", "(heads, C_in, C_in): the locally connected check's layer"},
                          {"w_key", "(heads, C_in, C_in)"},
                          {"b_qry", "(heads, C_in): Swin's q bias (zeros without qkv_bias)"},
                          {"b_key", "(heads, C_in): its k bias"},
                          {"b_val", "(heads, D_out): its v bias"},
                          {"han_windowed", "(heads, H_p, W_p, C_out): check 1, W-MSA per head with w_qry, w_key, "
                                           "b_qry, b_key, random_table and the values plus b_val, on the input padded "
                                           "to H_p, W_p (multiples of M1, M2)"},
                          {"han_connected", "the same as a locally connected layer (Han et al.): the side max_abs "
                                            "compares with han_windowed"},
                          {"han_windowed_shifted", "check 1 for SW-MSA (the case's shift)"},
                          {"han_connected_shifted", "check 1 for SW-MSA, locally connected"},
                          {"w_val", "(heads, C_in, C_out): the construction's W_val^h, the values of checks 1 and 2"},
                          {"w_out", "(heads C_out, C_out): W_out, head h's rows h C_out ... (h + 1) C_out - 1"},
                          {"b_out", "(C_out): the convolution's bias"}}),
    .memory_estimate = memory_estimate,
    .expected_tensors = expected_tensors,
}));

}  // namespace
}  // namespace attnconv
