// Hassani, Walton, Li, Li & Shi, "Neighborhood Attention Transformer", CVPR 2023:
// each query attends to the K_att x K_att window of NATTEN's clamped start
// (src/local/neighborhood_attention.hpp), with a relative position bias
// rpb (heads, 2 K_att - 1, 2 K_att - 1) and dilation d. Checked against
// convolution (docs/design.md, "Local attention"):
//  1. with the window as large as the image (the top-left L x L crop, L the
//     largest odd side that fits), neighborhood attention is global self-attention:
//     against the dense engine on a layer with random content and positional terms;
//  2. with Cordonnier's construction as the bias (rpb_h(delta) = -alpha |delta - Delta_h|^2,
//     no content terms, K_att >= K) on the input zero-padded by (K // 2) d, it is the
//     K x K convolution up to the finite-alpha bound of Theorem 1 over the window;
//  3. without the padding it differs from the zero-padded convolution in a border
//     band (measured per side, and the error there), and against global attention's
//     band (cordonnier2020.padding_remark) on the same weights.
#include <algorithm>
#include <cmath>
#include <xtensor/xview.hpp>

#include "construction/theorem1_check.hpp"
#include "proof/short_number.hpp"
#include "local/neighborhood_attention.hpp"
#include "local_common.hpp"
#include "mhsa/dense_engine.hpp"
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
const Metric global_max_abs{.name = "global_max_abs",
                            .help = "check 1: window = image (the top-left global_side crop) against the dense engine",
                            .error = true};
const Metric global_rel_l2{.name = "global_rel_l2", .help = "check 1: rel_l2", .error = true};
const Metric global_side{
    .name = "global_side", .type = MetricType::integer, .help = "check 1: the side of the square crop (odd)"};
const Metric global_allowance{.name = "global_allowance", .help = "check 1: the round-off allowance"};
const Metric unpadded_max_abs{.name = "unpadded_max_abs", .help = "check 3: max_abs without padding, band included"};
const Metric unpadded_bound{.name = "unpadded_bound",
                            .help = "check 3: the bound on the unpadded image (agreement per pixel)"};
const Metric global_band_sides{
    .name = "global_band_sides",
    .type = MetricType::array,
    .help = "global attention's band on the unpadded image (cordonnier2020.padding_remark), same weights",
    .nullable = true};
const Metric global_band_max_abs{.name = "global_band_max_abs", .help = "global attention's error in its band"};
const Metric versus_global_max_abs{
    .name = "versus_global_max_abs",
    .help = "unpadded neighborhood attention against unpadded global attention, whole image"};
}  // namespace
}  // namespace metric

namespace {

struct NeighborhoodParams {
  ConvShape shape;
  int window = 0, dilation = 1;
  Theorem1Shared shared;
  Dtype dtype = Dtype::float64;
};

void check(NeighborhoodParams& p, const Case&, const Request&) {
  const int kernel = square_odd_kernel(p.shape);
  if (p.window == 0) p.window = kernel;
  if (p.window % 2 == 0 || p.window < kernel)
    throw ParamError("window", "the window K_att must be odd and at least the kernel " + std::to_string(kernel) +
                                   " (check 2 needs every tap inside it), got " + std::to_string(p.window));
  for (int axis = 0; axis < 2; ++axis)
    if (p.shape.image[std::size_t(axis)] < p.window * p.dilation)
      throw ParamError("image", "NATTEN needs every side >= K_att * dilation = " + std::to_string(p.window * p.dilation) +
                                    " (the unpadded window of check 3)");
}

TensorShapes expected_tensors(const NeighborhoodParams& p) {
  TensorShapes shapes = local_conv_tensor_shapes(p.shape, p.shared.bias);
  const std::size_t heads = std::size_t(p.shape.kernel[0] * p.shape.kernel[0]), c_in = p.shape.in_channels;
  shapes["w_qry"] = shapes["w_key"] = {heads, c_in, c_in};
  shapes["v_pos"] = {heads, 3};
  return shapes;
}

// rpb_h(delta) = -alpha |delta - Delta_h|^2, delta in units of the dilation.
template <class T> xt::xtensor<T, 3> construction_rpb(int window, int kernel, double alpha) {
  const int heads = kernel * kernel, span = 2 * window - 1;
  xt::xtensor<T, 3> rpb({std::size_t(heads), std::size_t(span), std::size_t(span)});
  for (int h = 0; h < heads; ++h)
    for (int e1 = 0; e1 < span; ++e1)
      for (int e2 = 0; e2 < span; ++e2)
        rpb(std::size_t(h), std::size_t(e1), std::size_t(e2)) =
            T(quadratic_bias({e1 - window + 1, e2 - window + 1}, target_shift(h / kernel, h % kernel, {kernel, kernel}, {1, 1}), alpha));
  return rpb;
}

template <class T> HeadMaps<T> zero_maps(const HeadMaps<T>& like) {
  return xt::zeros<T>({like.shape(0), like.shape(1), like.shape(2), std::size_t(1)});
}

// Check 1: a layer with content (W_qry, W_key in the first C_in key dimensions)
// and a positional term v . r_delta (the last 3, W^_key = [0; I_3], u = 0), so
// that the dense engine's score is q . k + v . r_delta: a relative position bias.
template <class T> struct GlobalCheck {
  double max_abs = 0, rel_l2 = 0, allowance = 0;
  int side = 0;
  Image<T> local, dense;  // both sides, dumped
};
template <class T>
GlobalCheck<T> global_check(const MhsaLayer<T>& construction, const Image<T>& x, const CaseTensors& tensors) {
  const std::size_t c_in = x.shape(0), heads = construction.heads.size();
  const int side = int(std::min(x.shape(1), x.shape(2)) - 1) / 2 * 2 + 1;
  const Image<T> crop = xt::view(x, xt::all(), xt::range(0, side), xt::range(0, side));
  const xt::xtensor<T, 3> w_qry = tensors.get<T, 3>("w_qry", {heads, c_in, c_in});
  const xt::xtensor<T, 3> w_key = tensors.get<T, 3>("w_key", {heads, c_in, c_in});
  const Matrix<T> v_pos = tensors.get<T, 2>("v_pos", {heads, std::size_t(3)});
  MhsaLayer<T> layer = construction;
  layer.encoding = Encoding::quadratic;
  const std::size_t d_k = c_in + 3;
  const int span = 2 * side - 1;
  xt::xtensor<T, 3> rpb({heads, std::size_t(span), std::size_t(span)});
  const ContentMaps<T> content = content_maps(crop, w_qry, w_key);
  const HeadMaps<T>&q = content.q, &k = content.k;
  for (std::size_t h = 0; h < heads; ++h) {
    AttentionHead<T>& head = layer.heads[h];
    head.w_qry = xt::zeros<T>({c_in, d_k});
    head.w_key = xt::zeros<T>({c_in, d_k});
    xt::view(head.w_qry, xt::all(), xt::range(0, c_in)) = xt::view(w_qry, h);
    xt::view(head.w_key, xt::all(), xt::range(0, c_in)) = xt::view(w_key, h);
    head.w_key_hat = xt::zeros<T>({d_k, std::size_t(3)});
    for (std::size_t p = 0; p < 3; ++p) head.w_key_hat(c_in + p, p) = 1;
    head.u = xt::zeros<T>({d_k});
    head.v = xt::zeros<T>({d_k});
    for (std::size_t p = 0; p < 3; ++p) head.v(c_in + p) = v_pos(h, p);
    for (int e1 = 0; e1 < span; ++e1)
      for (int e2 = 0; e2 < span; ++e2) {
        T r[3];
        relative_encoding(Encoding::quadratic, e1 - side + 1, e2 - side + 1, r);
        T b = 0;
        for (std::size_t p = 0; p < 3; ++p) b += v_pos(h, p) * r[p];
        rpb(h, std::size_t(e1), std::size_t(e2)) = b;
      }
  }
  const Image<T> local = project_heads(layer, neighborhood_attention(q, k, head_values(layer, crop), rpb, side, 1));
  const Image<T> dense = tokens_to_image(mhsa_dense(layer, image_to_tokens(crop), std::size_t(side), std::size_t(side)),
                                         std::size_t(side), std::size_t(side));
  const Difference d = compare(local, dense);
  // Round-off: score terms |q||k| + |v_pos||r| at most, values through W_val W_out.
  const double q_max = double(xt::amax(xt::abs(q))()), k_max = double(xt::amax(xt::abs(k))());
  const double r_max = 2.0 * (side - 1) * (side - 1);
  const double score_scale = double(c_in) * q_max * k_max + double(xt::sum(xt::abs(v_pos))()) * r_max;
  const double value_scale = double(xt::amax(xt::abs(head_values(layer, crop)))()) *
                             double(xt::amax(xt::sum(xt::abs(layer.w_out), {0}))());
  const double abs_scale = double(xt::amax(xt::abs(layer.b_out))()) + double(heads) * value_scale;
  // Scores: D_k + 3 products, the maximum, the exp; outputs: the window's keys,
  // X W_val, concat W_out and the bias.
  const double score_terms = double(d_k + 3 + 2);
  const double sum_terms = double(side * side + c_in + heads * layer.head_dim() + 1);
  return {.max_abs = d.max_abs, .rel_l2 = d.rel_l2,
          .allowance = softmax_roundoff(score_terms, sum_terms, std::numeric_limits<T>::epsilon() / 2, score_scale,
                                        value_scale, abs_scale),
          .side = side,
          .local = local,
          .dense = dense};
}

template <class T> Outcome verify(const Case& c, const NeighborhoodParams& p) {
  const int height = p.shape.image[0], width = p.shape.image[1], kernel = p.shape.kernel[0];
  const int window = p.window, d = p.dilation, reach = kernel / 2 * d;
  const CaseTensors tensors(c, p.shared.seed);
  // The convolution, and the construction's values and output projection (Delta in units of d).
  const LocalConvCase<T> conv = local_conv_case<T>(tensors, p.shape, p.shared, d);
  const Image<T>& x = conv.x;
  const Image<T>& expected = conv.expected;
  const Kernel<T>& w = conv.w;
  const std::optional<Vector<T>>& b = conv.b;
  const Theorem1Options& options = conv.options;
  const MhsaLayer<T>& layer = conv.layer;
  const xt::xtensor<T, 3> rpb = construction_rpb<T>(window, kernel, options.alpha);
  const auto attend = [&](const Image<T>& image) {
    const HeadMaps<T> values = head_values(layer, image);
    return project_heads(layer, neighborhood_attention(zero_maps(values), zero_maps(values), values, rpb, window, d));
  };

  // 2. Zero-pad by the kernel's reach, attend, crop.
  const Image<T> x_pad = pad(x, Padding{reach, reach, reach, reach}, PaddingMode::zeros);
  const Image<T> padded_out = attend(x_pad);
  const Image<T> actual = xt::view(padded_out, xt::all(), xt::range(reach, reach + height), xt::range(reach, reach + width));
  // The keys of a window are K_att x K_att offsets of the query (in units of d): the bound over the window.
  const FiniteAlphaBound bound = construction_bound(layer, image_to_tokens(x_pad), std::size_t(window), std::size_t(window),
                                                    {kernel, kernel}, options);
  const Difference padded = compare(actual, expected);

  // 3. No padding: the clamped window against the zero-padded convolution.
  const Image<T> unpadded = attend(x);
  const FiniteAlphaBound unpadded_bound = construction_bound(layer, image_to_tokens(x), std::size_t(window),
                                                             std::size_t(window), {kernel, kernel}, options);
  const double threshold = unpadded_bound(options.alpha);
  const BorderBand band = measure_band(pixel_difference(unpadded, expected), threshold);
  const std::array<int, 4> band_expected{reach, reach, reach, reach};
  // Global attention on the unpadded image (the padding remark), same weights and dilation.
  Theorem1Options global_options = options;
  global_options.dilation = {d, d};
  const MhsaLayer<T> global_layer = theorem1_layer(w, b, global_options);
  const Image<T> global = tokens_to_image(mhsa_dense(global_layer, image_to_tokens(x), std::size_t(height), std::size_t(width)),
                                          std::size_t(height), std::size_t(width));
  const BorderBand global_band = measure_band(pixel_difference(global, expected), threshold);
  const Difference versus_global = compare(unpadded, global);

  // 1. The window as large as the image: global attention.
  const GlobalCheck<T> g = global_check(layer, x, tensors);

  const double padded_bound = bound(options.alpha);
  Outcome out;
  set_distance(out, padded);
  out.set(metric::bound, padded_bound);
  out.set(metric::attention_leak, bound.leak(options.alpha));
  out.set(metric::roundoff_allowance, bound.roundoff(options.alpha));
  out.set(metric::alpha, options.alpha);
  out.set(metric::global_max_abs, g.max_abs);
  out.set(metric::global_rel_l2, g.rel_l2);
  out.set(metric::global_side, g.side);
  out.set(metric::global_allowance, g.allowance);
  out.set(metric::unpadded_max_abs, compare(unpadded, expected).max_abs);
  out.set(metric::interior_max_abs, band.interior_max);
  out.set(metric::unpadded_bound, threshold);
  out.set(metric::band_sides, band.sides_json());
  out.set(metric::band_sides_expected, band_expected);
  out.set(metric::band_error, band.error(band_expected));
  out.set(metric::band_exceptions, band.exceptions);
  out.set(metric::band_max_abs, band.band_max);
  out.set(metric::global_band_sides, global_band.sides_json());
  out.set(metric::global_band_max_abs, global_band.band_max);
  out.set(metric::versus_global_max_abs, versus_global.max_abs);
  out.default_tolerance = tolerance({{metric::max_abs, padded_bound}, {metric::global_max_abs, g.allowance},
                                     {metric::interior_max_abs, threshold}, {metric::band_error, 0}});
  out.roundoff_tolerance =
      tolerance({{metric::max_abs, bound.roundoff(options.alpha)}, {metric::global_max_abs, g.allowance},
                 {metric::interior_max_abs, unpadded_bound.roundoff(options.alpha)}, {metric::band_error, 0}});
  out.message = "padded: the K x K convolution within the bound over the window; unpadded: a border band of " +
                band.sides_json().dump() + " (expected " + std::to_string(reach) + " per side) where a head whose "
                "target is missing attends to the nearest pixel of its clamped window instead of the zero padding, "
                "error up to " + short_number(band.band_max) + "; unpadded global attention (the padding remark) on "
                "the same weights has the band " + global_band.sides_json().dump() + " and differs from it by " +
                short_number(versus_global.max_abs);
  vacuous_if_zero(out, "the input", x, "the bias");
  vacuous_if_zero(out, "conv_weight (the convolution, and so the layer's values)", conv.w, "the bias");
  out.tensors = conv_tensors<T>(x, expected, actual, w, b);
  out.tensors.push_back({"actual_unpadded", xt::xarray<T>(unpadded)});
  out.tensors.push_back({"global_unpadded", xt::xarray<T>(global)});
  out.tensors.push_back({"rpb", xt::xarray<T>(rpb)});
  for (auto& t : head_weight_tensors(layer)) out.tensors.push_back(std::move(t));
  const std::size_t heads = layer.heads.size(), c_in = x.shape(0);
  out.tensors.push_back({"global_crop_expected", xt::xarray<T>(g.dense)});
  out.tensors.push_back({"global_crop_actual", xt::xarray<T>(g.local)});
  out.tensors.push_back({"w_qry", xt::xarray<T>(tensors.get<T, 3>("w_qry", {heads, c_in, c_in}))});
  out.tensors.push_back({"w_key", xt::xarray<T>(tensors.get<T, 3>("w_key", {heads, c_in, c_in}))});
  out.tensors.push_back({"v_pos", xt::xarray<T>(tensors.get<T, 2>("v_pos", {heads, std::size_t(3)}))});
  return out;
}

using P = NeighborhoodParams;
const bool registered = register_proof(make_proof<P>({
    .id = "hassani2023.neighborhood_attention",
    .paper = "Hassani, Walton, Li, Li & Shi, Neighborhood Attention Transformer, CVPR 2023 (NATTEN's window and bias "
             "semantics), against Cordonnier, Loukas & Jaggi, ICLR 2020, Theorem 1",
    .statement = "Neighborhood attention with the window as large as the image is global self-attention; with "
                 "Cordonnier's quadratic bias rpb_h(delta) = -alpha |delta - Delta_h|^2 and no content terms, on the "
                 "input zero-padded by (K // 2) d, it is the K x K convolution as alpha -> infinity, within the "
                 "finite-alpha bound over the window; without the padding it differs from the zero-padded "
                 "convolution exactly in a border band of (K // 2) d per side.",
    .params = {nested(&P::shape,
                      conv_shape(
                          {.kernel_help = "convolution kernel K (odd, square); heads = K^2, head_dim = out_channels",
                           .in_help = "D_in",
                           .out_help = "D_out",
                           .groups = false})),
               field(&P::window, {.name = "window",
                                  .help = "neighborhood window K_att (odd, >= K; 0: K)",
                                  .default_value = 0,
                                  .minimum = 0,
                                  .maximum = 4095}),
               field(&P::dilation, {.name = "dilation", .default_value = 1, .minimum = 1}),
               nested(&P::shared, theorem1_shared()), field(&P::dtype, dtype_param())},
    .retired = {{"engine", "dense"}},
    .tensors = {"input", "conv_weight", "conv_bias", "w_qry", "w_key", "v_pos"},
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = distance_metrics(
        "check 2: neighborhood attention on the zero-padded input against the convolution",
        {metric::bound.described("the finite-alpha bound of Theorem 1 over the K_att x K_att window"),
         metric::attention_leak.described("eps(alpha), the softmax mass off the target"),
         metric::roundoff_allowance.described("the round-off part of the bound"), metric::alpha, metric::global_max_abs,
         metric::global_rel_l2, metric::global_side, metric::global_allowance, metric::unpadded_max_abs,
         metric::interior_max_abs.described("check 3: max_abs inside the measured band"), metric::unpadded_bound,
         metric::band_sides.described("check 3: measured band [top, bottom, left, right]; null when no pixel agrees"),
         metric::band_sides_expected.described("check 3: the kernel's reach (K // 2) d per side"),
         metric::band_error.described("check 3: sum over sides of |measured - expected| plus band_exceptions"),
         metric::band_exceptions.described("check 3: pixels inside the box that differ or outside it that agree"),
         metric::band_max_abs.described("check 3: the error in the band"), metric::global_band_sides,
         metric::global_band_max_abs, metric::versus_global_max_abs}),
    .dumps = conv_dumps("the zero-padded convolution, (C_out, H, W)", "neighborhood attention on the padded input",
                         {{"actual_unpadded", "clamped windows on the image as it is"},
                          {"global_unpadded", "global attention on the same"},
                          {"rpb", "(heads, 2 K_att - 1, 2 K_att - 1): the quadratic bias"},
                          {"w_val", "(heads, C_in, C_out): the construction's W_val^h, shared by checks 1 to 3"},
                          {"w_out", "(heads C_out, C_out): W_out, head h's rows h C_out ... (h + 1) C_out - 1"},
                          {"b_out", "(C_out): the convolution's bias"},
                          {"global_crop_expected", "check 1: global self-attention (dense engine) on the top-left "
                                                   "S x S crop, S = metrics.global_side: (C_out, S, S)"},
                          {"global_crop_actual", "check 1: neighborhood attention with K_att = S on the same crop"},
                          {"w_qry", "(heads, C_in, C_in): check 1's W_qry^h"},
                          {"w_key", "(heads, C_in, C_in): check 1's W_key^h"},
                          {"v_pos", "(heads, 3): check 1's rpb_h(delta) = v_pos^h . (|delta|^2, delta1, delta2)"}}),
    .expected_tensors = expected_tensors,
}));

}  // namespace
}  // namespace attnconv
