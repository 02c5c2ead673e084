// d'Ascoli, Touvron, Leavitt, Morcos, Biroli & Sagun, "ConViT: Improving Vision
// Transformers with Soft Convolutional Inductive Biases", ICML 2021: gated
// positional self-attention (mhsa/gpsa.hpp) with ConViT's local init
// (construction/convit_init.hpp). Checked and measured:
//   - with sigma(lambda) -> 1 and a large locality strength, GPSA is the
//     convolution of its limit (the positional softmax at locality strength
//     1000 and gate 1000, where every weight is 0, 1 or an exact tie), on the
//     patches whose window lies in the grid (GPSA has no padding);
//   - at ConViT's default init (locality strength 1, lambda = 1, values I,
//     qk.weight, proj.weight of std 0.02): the distance to its nearest
//     convolution (construction/nearest_convolution.hpp: the attention of the
//     centre patch on the window), per head, and to its limit convolution;
//   - for `reach_tolerance`: the smallest locality strength (gate 1000) and the
//     smallest lambda (locality strength 1000) whose GPSA is within it of the
//     limit convolution.
// Loaded weights go by ConViT's state_dict names in PyTorch's (out, in) layout
// (qk.weight (2D, D), proj.weight, proj.bias; issue 23: the former w_qry,
// w_key, w_proj were (in, out) and took a PyTorch weight silently).
#include <cmath>
#include <limits>
#include <xtensor/xview.hpp>

#include "construction/convit_init.hpp"
#include "construction/nearest_convolution.hpp"
#include "construction/theorem1.hpp"
#include "io/errors.hpp"
#include "metrics/compare.hpp"
#include "mhsa/gpsa.hpp"
#include "ops/conv2d_blocked.hpp"
#include "proof/case_tensors.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"
#include "proof/vacuous.hpp"

namespace attnconv {
namespace metric {
namespace {
const Metric nearest_max_abs{
    .name = "nearest_max_abs",
    .help = "GPSA against its nearest convolution (the centre patch's attention on the window)",
    .error = true};
const Metric nearest_rel_l2{.name = "nearest_rel_l2", .help = "the same, relative L2"};
const Metric roundoff_allowance{.name = "roundoff_allowance", .help = "2 n u times the absolute scale of the outputs"};
const Metric sigma{.name = "sigma", .help = "sigma(lambda) of the case"};
const Metric head_max_abs{
    .name = "head_max_abs", .type = MetricType::array, .help = "per head: its output against its nearest convolution"};
const Metric head_leak{.name = "head_leak",
                       .type = MetricType::array,
                       .help = "per head: 1 - attention on the tap nearest Delta_h (centre patch)"};
const Metric head_mass_outside{.name = "head_mass_outside",
                               .type = MetricType::array,
                               .help = "per head: attention outside the window (centre patch)"};
const Metric locality_strength_min{
    .name = "locality_strength_min",
    .help = "smallest locality strength 2^(j/4) (gate 1000) within reach_tolerance of the limit (null: none to 1024)",
    .nullable = true};
const Metric gating_min{
    .name = "gating_min",
    .help = "smallest lambda on a 0.5 grid (locality strength 1000) within reach_tolerance (null: none to 50)",
    .nullable = true};
const Metric sigma_min{.name = "sigma_min", .help = "sigma(gating_min)", .nullable = true};
}  // namespace
}  // namespace metric

namespace {

constexpr double limit = 1000;  // locality strength and gate of the limit

struct GpsaParams {
  std::array<int, 2> image{}, window{};
  std::size_t heads = 0, head_dim = 0;
  double locality_strength = 1, gating = 1, weight_scale = 0, reach_tolerance = 0;
  Dtype dtype = Dtype::float64;
  std::uint64_t seed = 0;
};

void check(GpsaParams& p, const Case&, const Request&) {
  try {
    (void)convit_kernel_size(p.heads);
  } catch (const std::invalid_argument& e) {
    throw ParamError("heads", e.what());
  }
  // The window sits on the offsets around the centre patch (H // 2, W // 2):
  // rows -c1 ... K1 - 1 - c1, c = (K - 1) // 2, must lie in the grid, so an
  // even side must be smaller than the image's.
  for (int axis = 0; axis < 2; ++axis) {
    const int side = p.image[axis], k = p.window[axis], origin = side / 2, c = (k - 1) / 2;
    if (origin - c < 0 || origin + k - 1 - c > side - 1)
      throw ParamError("window", "the " + std::to_string(p.window[0]) + "x" + std::to_string(p.window[1]) +
                                     " window around the centre patch (" + std::to_string(p.image[0] / 2) + ", " +
                                     std::to_string(p.image[1] / 2) + ") does not fit the " +
                                     std::to_string(p.image[0]) + "x" + std::to_string(p.image[1]) +
                                     " image: a side may be at most the image's, and an even side must be smaller");
  }
  // ConViT's GPSA (facebookresearch/convit, get_rel_indices) takes the grid's
  // side as int(N ** 0.5): it raises on a non-square N and gives a grid like
  // [2, 8] the 4 x 4 geometry. A non-square grid has no official counterpart:
  // refused (docs/positional_encodings.md, "Non-square grids").
  if (p.image[0] != p.image[1])
    throw ParamError("image", "ConViT's GPSA assumes a square grid of patches (its get_rel_indices takes the side "
                              "int(N ** 0.5), raising on a non-square N and giving [2, 8] the 4 x 4 geometry): a " +
                                  std::to_string(p.image[0]) + " x " + std::to_string(p.image[1]) +
                                  " image has no official counterpart; give a square [H, H]");
}

TensorShapes expected_tensors(const GpsaParams& p) {
  const std::size_t d = p.heads * p.head_dim;
  // ConViT's state_dict names in PyTorch's (out, in) layout: qk.weight is [W_q; W_k] (2D, D), so a
  // transposed one is refused by its shape; y = x W^T + b for proj.
  return {{"input", {d, std::size_t(p.image[0]), std::size_t(p.image[1])}},
          {"qk.weight", {2 * d, d}}, {"proj.weight", {d, d}}, {"proj.bias", {d}}};
}

// A drawn tensor is uniform in [-1, 1) times `scale`; a loaded one is as given.
template <class T, std::size_t N>
xt::xtensor<T, N> weight(const Case& c, const CaseTensors& tensors, const char* key, const std::array<std::size_t, N>& shape,
                         double scale) {
  xt::xtensor<T, N> w = tensors.get<T, N>(key, shape);
  if (!has_case_tensor(c, key)) w *= T(scale);
  return w;
}

// The GPSA output on the patches whose window lies in the grid against the
// convolution (no padding) of `kernel`: (C, H - K1 + 1, W - K2 + 1).
template <class T>
Difference against_conv(const Image<T>& gpsa, const Image<T>& x, const Kernel<T>& kernel, const Vector<T>& bias,
                        std::array<int, 2> window) {
  const Image<T> conv = conv2d_blocked(x, kernel, std::optional<Vector<T>>(bias), ConvGeometry{});
  const auto c = kernel_center(window);
  const Image<T> inner = xt::view(gpsa, xt::all(), xt::range(c[0], c[0] + int(conv.shape(1))),
                                  xt::range(c[1], c[1] + int(conv.shape(2))));
  return compare(inner, conv);
}

template <class T> Outcome verify(const Case& c, const GpsaParams& p, const Request& request) {
  const CaseTensors tensors(c, p.seed);
  const std::size_t d = p.heads * p.head_dim, h_img = std::size_t(p.image[0]), w_img = std::size_t(p.image[1]);
  const Image<T> x = tensors.get<T, 3>("input", {d, h_img, w_img});
  const Matrix<T> tokens = image_to_tokens(x);
  // GpsaLayer multiplies x W (in, out): the transposes of PyTorch's nn.Linear weights.
  const Matrix<T> qk = weight<T, 2>(c, tensors, "qk.weight", {2 * d, d}, p.weight_scale);
  GpsaLayer<T> layer{.heads = p.heads,
                     .w_qry = xt::transpose(xt::view(qk, xt::range(0, d), xt::all())),
                     .w_key = xt::transpose(xt::view(qk, xt::range(d, 2 * d), xt::all())),
                     .w_val = xt::eye<T>(d),
                     .w_proj = xt::transpose(weight<T, 2>(c, tensors, "proj.weight", {d, d}, p.weight_scale)),
                     .b_proj = weight<T, 1>(c, tensors, "proj.bias", {d}, p.weight_scale),
                     .v_pos = {},
                     .gating = {}};
  const auto at = [&](double strength, double gate) {
    GpsaLayer<T> l = layer;
    l.v_pos = convit_v_pos<T>(p.heads, strength);
    l.gating = xt::xtensor<T, 1>(xt::ones<T>({p.heads}) * T(gate));
    return l;
  };
  const auto image_of = [&](const GpsaLayer<T>& l) { return tokens_to_image(gpsa_forward(l, tokens, h_img, w_img), h_img, w_img); };

  // W_val^h (D x d) and W_proj^h as Lemma 1 splits them, for the equivalent kernel.
  xt::xtensor<T, 3> w_val_heads = xt::zeros<T>({p.heads, d, p.head_dim});
  for (std::size_t h = 0; h < p.heads; ++h)
    xt::view(w_val_heads, h) = xt::view(layer.w_val, xt::all(), xt::range(h * p.head_dim, (h + 1) * p.head_dim));
  const std::array<int, 2> origin{p.image[0] / 2, p.image[1] / 2};
  const std::size_t centre = std::size_t(origin[0]) * w_img + std::size_t(origin[1]);
  const auto offsets = [&](const GpsaLayer<T>& l) {
    return OffsetWeights<T>(xt::reshape_view(gpsa_attention(l, tokens, h_img, w_img, centre), {p.heads, h_img, w_img}));
  };
  const auto kernel_of = [&](const OffsetWeights<T>& o) {
    return window_kernel(equivalent_kernel(o, w_val_heads, layer.w_proj), origin, p.window);
  };

  const GpsaLayer<T> case_layer = at(p.locality_strength, p.gating);
  const Image<T> y = image_of(case_layer);
  const Kernel<T> limit_kernel = kernel_of(offsets(at(limit, limit)));
  const Difference d_limit = against_conv(y, x, limit_kernel, layer.b_proj, p.window);
  const OffsetWeights<T> attention = offsets(case_layer);
  const Difference d_nearest = against_conv(y, x, kernel_of(attention), layer.b_proj, p.window);
  const std::vector<HeadTap> taps = head_taps(attention, origin, convit_centers(p.heads), p.window);

  // Per head: its own output against its own nearest convolution (the other heads' values zeroed).
  json head_max_abs = json::array(), head_leak = json::array(), head_mass_outside = json::array();
  for (std::size_t h = 0; h < p.heads; ++h) {
    GpsaLayer<T> one = case_layer;
    one.w_val = xt::zeros<T>({d, d});
    xt::view(one.w_val, xt::all(), xt::range(h * p.head_dim, (h + 1) * p.head_dim)) =
        xt::view(layer.w_val, xt::all(), xt::range(h * p.head_dim, (h + 1) * p.head_dim));
    xt::xtensor<T, 3> one_heads = xt::zeros<T>(w_val_heads.shape());
    xt::view(one_heads, h) = xt::view(w_val_heads, h);
    const Kernel<T> k = window_kernel(equivalent_kernel(attention, one_heads, layer.w_proj), origin, p.window);
    head_max_abs.push_back(against_conv(image_of(one), x, k, layer.b_proj, p.window).max_abs);
    head_leak.push_back(taps[h].leak);
    head_mass_outside.push_back(taps[h].mass_outside);
  }

  // Round-off (first order, as finite_alpha.hpp (a)): every output is a sum of at
  // most n = H W + 2 D + K1 K2 + 4 terms in either computation, each within
  // n u |b|_inf + sum_h max_k (|x_k| |W_val^h| |W_proj^h|)_inf.
  const double u = std::numeric_limits<T>::epsilon() / 2;
  const xt::xtensor<double, 2> x_abs = xt::abs(xt::cast<double>(tokens));
  double abs_scale = double(xt::amax(xt::abs(xt::cast<double>(layer.b_proj)))());
  for (std::size_t h = 0; h < p.heads; ++h) {
    const xt::xtensor<double, 2> v = xt::abs(xt::cast<double>(xt::view(layer.w_val, xt::all(), xt::range(h * p.head_dim, (h + 1) * p.head_dim))));
    const xt::xtensor<double, 2> o = xt::abs(xt::cast<double>(xt::view(layer.w_proj, xt::range(h * p.head_dim, (h + 1) * p.head_dim), xt::all())));
    Matrix<double> m = xt::zeros<double>({d, d});
    for (std::size_t a = 0; a < d; ++a)
      for (std::size_t e = 0; e < p.head_dim; ++e)
        for (std::size_t b = 0; b < d; ++b) m(a, b) += v(a, e) * o(e, b);
    double largest = 0;
    for (std::size_t k = 0; k < x_abs.shape(0); ++k)
      for (std::size_t b = 0; b < d; ++b) {
        double s = 0;
        for (std::size_t a = 0; a < d; ++a) s += x_abs(k, a) * m(a, b);
        largest = std::max(largest, s);
      }
    abs_scale += largest;
  }
  const double n = double(h_img * w_img + 2 * d + std::size_t(p.window[0] * p.window[1]) + 4);
  const double roundoff = 2 * n * u * abs_scale;

  // The smallest locality strength (gate at the limit) and gate (strength at the
  // limit) within reach_tolerance of the limit convolution, on geometric / even grids.
  const auto within = [&](double strength, double gate) {
    return against_conv(image_of(at(strength, gate)), x, limit_kernel, layer.b_proj, p.window).max_abs <= p.reach_tolerance;
  };
  json strength_min = nullptr, gate_min = nullptr;
  for (int j = -8; j <= 40 && strength_min.is_null(); ++j)
    if (within(std::pow(2.0, j / 4.0), limit)) strength_min = std::pow(2.0, j / 4.0);
  for (int j = -20; j <= 100 && gate_min.is_null(); ++j)
    if (within(limit, j / 2.0)) gate_min = j / 2.0;

  Outcome out;
  set_distance(out, d_limit);
  out.set(metric::nearest_max_abs, d_nearest.max_abs);
  out.set(metric::nearest_rel_l2, d_nearest.rel_l2);
  out.set(metric::roundoff_allowance, roundoff);
  out.set(metric::sigma, 1 / (1 + std::exp(-p.gating)));
  out.set(metric::head_max_abs, head_max_abs);
  out.set(metric::head_leak, head_leak);
  out.set(metric::head_mass_outside, head_mass_outside);
  out.set(metric::locality_strength_min, strength_min);
  out.set(metric::gating_min, gate_min);
  out.set(metric::sigma_min, gate_min.is_null() ? json(nullptr) : json(1 / (1 + std::exp(-gate_min.get<double>()))));
  out.default_tolerance = tolerance({{metric::max_abs, roundoff}});
  vacuous_if_zero(out, "the input", x, "proj.bias");
  vacuous_if_zero(out, "proj.weight", layer.w_proj, "proj.bias");
  if (request.expect == Expect::fail)
    out.predicted_failure = PredictedFailure{
        metric::max_abs.name, roundoff, 0.0,
        "with a finite locality strength and gate the attention spreads beyond each head's tap and mixes in the "
        "content softmax, so GPSA is not its limit convolution"};
  out.tensors = {{"input", xt::xarray<T>(x)},
                 {"expected", xt::xarray<T>(conv2d_blocked(x, limit_kernel, std::optional<Vector<T>>(layer.b_proj), ConvGeometry{}))},
                 {"actual", xt::xarray<T>(y)},
                 {"limit_kernel", xt::xarray<T>(limit_kernel)},
                 {"w_qry", xt::xarray<T>(case_layer.w_qry)},
                 {"w_key", xt::xarray<T>(case_layer.w_key)},
                 {"w_val", xt::xarray<T>(case_layer.w_val)},
                 {"w_proj", xt::xarray<T>(case_layer.w_proj)},
                 {"b_proj", xt::xarray<T>(case_layer.b_proj)},
                 {"v_pos", xt::xarray<T>(case_layer.v_pos)},
                 {"gating", xt::xarray<T>(case_layer.gating)}};
  return out;
}

// Bytes at the peak, D = N_h d, T = H W, K = K1 K2 (s bytes an element): while a kernel is read off
// (nearest_convolution.hpp equivalent_kernel): M_h = W_val^h W_out^h in double (8 N_h D^2) and the
// kernel over every offset of the image (s D^2 T); beside them the D x D matrices alive (qk.weight 2,
// the layer, the case's layer, one head's or a point's of the reach searches 4 each, the per-head
// values 2: 16 s D^2, the round-off's |W_val^h||W_out^h| 8 D^2), the limit kernel and one more
// (2 s D^2 K), and the tokens (input, queries, keys, values, outputs, the convolutions, about 10 s T D,
// |X| in double 8 T D).
double memory_estimate(const Case&, const GpsaParams& p) {
  const double s = double(dtype_bytes(p.dtype)), d = double(p.heads) * double(p.head_dim);
  const double t = double(p.image[0]) * double(p.image[1]), k = double(p.window[0]) * double(p.window[1]);
  return process_bytes + 8 * double(p.heads) * d * d + s * d * d * (t + 16 + 2 * k) + 8 * d * d + (10 * s + 8) * t * d;
}

using P = GpsaParams;
const bool registered = register_proof(make_proof<P>({
    .id = "dascoli2021.convit_gpsa",
    .paper = "d'Ascoli, Touvron, Leavitt, Morcos, Biroli & Sagun, ConViT: Improving Vision Transformers with Soft "
             "Convolutional Inductive Biases, ICML 2021, Eq. 5 and the local init (facebookresearch/convit)",
    .statement =
        "Gated positional self-attention with ConViT's local init (v_pos^h = locality_strength (2 Delta_h, "
        "-1), values I) tends, as sigma(lambda_h) -> 1 and the locality strength grows, to a convolution (Theorem 1's "
        "construction); at ConViT's default init (locality strength 1, lambda = 1) it is measurably not one.",
    .params = {field(&P::image, {.name = "image", .help = "[H, W] patches", .minimum = 1, .maximum = 4096}),
               field(&P::heads, size_param("heads", "N_h, a square K^2 (ConViT: 4, 9, 16)", 256)),
               field(&P::head_dim, size_param("head_dim", "d = D / N_h (ConViT: 48)", 256)),
               field(&P::window, {.name = "window",
                                  .help = "the nearest convolution's kernel [K1, K2], around the centre patch "
                                          "(H // 2, W // 2): a side at most the image's, an even one smaller",
                                  .default_value = std::array<int, 2>{3, 3},
                                  .minimum = 1,
                                  .maximum = 4096}),
               field(&P::locality_strength, {.name = "locality_strength",
                                             .help = "ConViT's locality strength (default 1)",
                                             .default_value = 1.0,
                                             .minimum = 0.0,
                                             .exclusive_minimum = true}),
               field(&P::gating, {.name = "gating",
                                  .help = "lambda_h of every head (ConViT's init: 1, sigma = 0.731)",
                                  .default_value = 1.0}),
               field(
                   &P::weight_scale,
                   {.name = "weight_scale",
                    .help = "drawn qk.weight, proj.weight, proj.bias are uniform in [-1, 1) times this (default: "
                            "std 0.02, ConViT's truncated-normal std; its proj.bias is 0); > 0: at 0 proj.weight is 0 "
                            "and both sides are proj.bias",
                    .default_value = 0.034641016151377546,
                    .minimum = 0.0,
                    .exclusive_minimum = true}),
               field(&P::reach_tolerance, {.name = "reach_tolerance",
                                           .help = "max_abs for locality_strength_min and gating_min",
                                           .default_value = 1e-6,
                                           .minimum = 0.0,
                                           .exclusive_minimum = true}),
               field(&P::dtype, dtype_param()), field(&P::seed, seed_param())},
    .tensors = {"input", "qk.weight", "proj.weight", "proj.bias"},
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = distance_metrics("GPSA against its limit convolution (patches whose window lies in the grid)",
                                {metric::nearest_max_abs, metric::nearest_rel_l2, metric::roundoff_allowance,
                                 metric::sigma, metric::head_max_abs, metric::head_leak, metric::head_mass_outside,
                                 metric::locality_strength_min, metric::gating_min, metric::sigma_min}),
    .dumps = {{"input", "(D, H, W)"},
               {"expected", "the limit convolution without padding, bias b_proj: (D, H - K1 + 1, W - K2 + 1), "
                            "max_abs compares it with actual[:, c1:, c2:] (c = (K - 1) // 2)"},
               {"actual", "GPSA's output (D, H, W)"},
               {"limit_kernel", "the limit convolution's kernel (D, D, K1, K2)"},
               {"w_qry", "(D, D): x W, columns h d ... (h + 1) d - 1 head h's"},
               {"w_key", "(D, D)"},
               {"w_val", "(D, D): I"},
               {"w_proj", "(D, D)"},
               {"b_proj", "(D)"},
               {"v_pos", "(N_h, 3): pos_h(q, k) = softmax_k(v_pos^h . (delta1, delta2, |delta|^2)), delta = k - q (row, column)"},
               {"gating", "(N_h): lambda_h"}},
    .memory_estimate = memory_estimate,
    .expected_tensors = expected_tensors,
}));

}  // namespace
}  // namespace attnconv
