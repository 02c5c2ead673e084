// Cordonnier, Loukas & Jaggi, "On the Relationship between Self-Attention and
// Convolutional Layers", ICLR 2020, Section 4 read backwards: a trained
// attention layer whose heads attend around centres Δ_h (quadratic, Gaussian
// positional scores) against its nearest K1 x K2 convolution. For
// positional-only heads and a query whose keys all exist the layer is exactly
// the convolution of its equivalent kernel W_eff[:, :, δ] = Σ_h P_h(δ)
// (W_val^h W_out^h)ᵀ; the nearest K1 x K2 convolution keeps W_eff on the
// K1 x K2 window of offsets (docs/design.md, "Nearest convolution"). The layer
// runs as Eq. 8 (to_mhsa_layer) through the MHSA engines; the convolution
// through conv2d_blocked.
#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

#include "construction/gaussian_attention.hpp"
#include "construction/nearest_convolution.hpp"
#include "io/errors.hpp"
#include "proof/npy.hpp"
#include "proof/short_number.hpp"
#include "metrics/compare.hpp"
#include "mhsa/attention_row.hpp"
#include "mhsa/engine.hpp"
#include "ops/conv2d_blocked.hpp"
#include "proof/case_tensors.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"
#include "proof/vacuous.hpp"
#include "theorem1_common.hpp"

namespace attnconv {
namespace metric {
namespace {
const Metric max_abs_interior{
    .name = "max_abs_interior", .help = "max_abs on the pixels whose window lies inside the image", .error = true};
const Metric rel_l2_interior{
    .name = "rel_l2_interior", .help = "rel_l2 on the pixels whose window lies inside the image", .error = true};
const Metric max_abs_border{
    .name = "max_abs_border", .help = "max_abs on the border band (0 when it is empty)", .error = true};
const Metric rel_l2_border{
    .name = "rel_l2_border", .help = "rel_l2 on the border band (0 when it is empty)", .error = true};
const Metric kernel_resolved{
    .name = "kernel_resolved", .type = MetricType::array, .help = "[K1, K2] of the nearest convolution"};
const Metric tap{
    .name = "tap", .type = MetricType::array, .help = "per head: the grid offset [row, column] nearest its centre"};
const Metric center_distance{
    .name = "center_distance", .type = MetricType::array, .help = "per head: |Delta_h - tap| in pixels"};
const Metric leak{
    .name = "leak", .type = MetricType::array, .help = "per head: 1 - its attention on its tap (reference query)"};
const Metric mass_outside{
    .name = "mass_outside", .type = MetricType::array, .help = "per head: its attention outside the window"};
const Metric uncovered_taps{
    .name = "uncovered_taps", .type = MetricType::integer, .help = "taps of the window no head is nearest to"};
const Metric shared_taps{
    .name = "shared_taps", .type = MetricType::integer, .help = "taps two or more heads are nearest to"};
const Metric convolution_like_heads{.name = "convolution_like_heads",
                                    .type = MetricType::integer,
                                    .help = "heads with their tap in the window and a leak of at most 0.5"};
const Metric content_share{.name = "content_share",
                           .help = "with content terms: rel_l2 of the output without them against the output with them",
                           .always = false};
}  // namespace
}  // namespace metric

namespace {

struct NearestParams {
  std::array<int, 2> image{};
  std::size_t in_channels = 0, out_channels = 0, heads = 0, head_dim = 0, key_dim = 0;
  bool pad_first = false;                      // "padding": "same"
  AutoPair kernel;                             // "auto": the smallest window holding `mass`
  double mass = 0.99;
  double alpha = 1;                            // A_h = alpha I when the case gives neither precisions nor alphas
  bool loads_precisions = false, loads_alphas = false;  // never drawn from the seed
  Dtype dtype = Dtype::float64;
  std::uint64_t seed = 0;
};

const std::vector<std::string> tensor_names{"centers", "precisions", "alphas", "w_val", "w_out",
                                            "b_out",   "w_qry",      "w_key",  "input"};

std::string where(const Case& c, const std::string& key) {
  return c.file + ": case '" + c.name + "': key 'weights." + key + "': ";
}

// The loaded precisions or alphas must make every positional score a
// (semi-)definite quadratic: A_h symmetric positive semi-definite, alpha_h >= 0.
// A_h is judged scaled by its largest entry, so that no product overflows
// (an unscaled determinant of entries near 1e160 is inf - inf).
template <class T> void check_precisions(const Case& c, std::size_t heads) {
  if (has_case_tensor(c, "precisions")) {
    const auto a = load_case_tensor<T>(c, "precisions", {heads, 2, 2});
    for (std::size_t h = 0; h < heads; ++h) {
      const double a11 = a(h, 0, 0), a12 = a(h, 0, 1), a21 = a(h, 1, 0), a22 = a(h, 1, 1);
      const std::string entries = "([[" + short_number(a11) + ", " + short_number(a12) + "], [" + short_number(a21) +
                                  ", " + short_number(a22) + "]])";
      if (!std::isfinite(a11) || !std::isfinite(a12) || !std::isfinite(a21) || !std::isfinite(a22))
        throw InputError(where(c, "precisions") + "head " + std::to_string(h) + "'s precision is not finite " + entries);
      const double scale = std::max({std::abs(a11), std::abs(a12), std::abs(a21), std::abs(a22)});
      if (scale == 0) continue;  // A_h = 0: a uniform positional score
      const double b11 = a11 / scale, b12 = a12 / scale, b21 = a21 / scale, b22 = a22 / scale;  // in [-1, 1]
      const double tolerance = 64 * std::numeric_limits<T>::epsilon();
      if (std::abs(b12 - b21) > tolerance)
        throw InputError(where(c, "precisions") + "head " + std::to_string(h) + "'s precision is not symmetric (" +
                         short_number(a12) + " above the diagonal, " + short_number(a21) + " below)");
      const double det = b11 * b22 - b12 * b21;
      if (b11 < -tolerance || b22 < -tolerance || det < -tolerance)
        throw InputError(where(c, "precisions") + "head " + std::to_string(h) +
                         "'s precision is not positive semi-definite " + entries +
                         ": its score would grow away from the centre");
    }
  }
  if (has_case_tensor(c, "alphas")) {
    const auto a = load_case_tensor<T>(c, "alphas", {heads});
    for (std::size_t h = 0; h < heads; ++h)
      if (!(a(h) >= 0) || !std::isfinite(a(h)))
        throw InputError(where(c, "alphas") + "head " + std::to_string(h) + "'s alpha is " + short_number(a(h)) +
                         ", it must be finite and >= 0");
  }
}

// How far a centre may lie from the origin, per axis: twice the image side.
// With "same" padding the layer attends over at most 2 H - 1 rows, so every
// offset it can attend lies within it; a centre farther away points at no
// offset at all.
constexpr int center_reach = 2;

template <class T> void check_centers(const Case& c, const NearestParams& p) {
  if (!has_case_tensor(c, "centers")) return;  // drawn in [-1, 1)
  const auto centers = load_case_tensor<T>(c, "centers", {p.heads, 2});
  for (std::size_t h = 0; h < p.heads; ++h)
    for (std::size_t axis = 0; axis < 2; ++axis) {
      const double value = double(centers(h, axis)), reach = double(center_reach) * p.image[axis];
      if (!(std::abs(value) <= reach))
        throw InputError(where(c, "centers") + "head " + std::to_string(h) + "'s centre (" +
                         short_number(double(centers(h, 0))) + ", " + short_number(double(centers(h, 1))) + ") has " +
                         (axis == 0 ? "a row" : "a column") + " offset beyond +-" + short_number(reach) +
                         " (twice the image side): no offset the layer attends lies there");
    }
}

void check(NearestParams& p, const Case& c, const Request&) {
  if (const auto& k = p.kernel.size; k && ((*k)[0] > p.image[0] || (*k)[1] > p.image[1]))
    throw ParamError("kernel", "the " + std::to_string((*k)[0]) + "x" + std::to_string((*k)[1]) + " window must fit the " +
                                   std::to_string(p.image[0]) + "x" + std::to_string(p.image[1]) + " image");
  p.loads_precisions = has_case_tensor(c, "precisions");
  p.loads_alphas = has_case_tensor(c, "alphas");
  if (p.loads_precisions && p.loads_alphas)
    throw InputError(where(c, "alphas") + "give either precisions (A_h) or alphas (A_h = alpha_h I), not both");
  if (p.key_dim == 0 && (has_case_tensor(c, "w_qry") || has_case_tensor(c, "w_key")))
    throw ParamError("key_dim", "is 0 (no content terms), but the case gives w_qry or w_key: set key_dim to their D_k");
  with_dtype(p.dtype, [&](auto tag) {
    check_precisions<decltype(tag)>(c, p.heads);
    check_centers<decltype(tag)>(c, p);
  });
}

TensorShapes expected_tensors(const NearestParams& p) {
  const std::size_t h = std::size_t(p.image[0]), w = std::size_t(p.image[1]);
  TensorShapes out{{"centers", {p.heads, 2}},
                   {"w_val", {p.heads, p.in_channels, p.head_dim}},
                   {"w_out", {p.heads * p.head_dim, p.out_channels}},
                   {"b_out", {p.out_channels}},
                   {"input", {p.in_channels, h, w}}};
  // A_h comes from a file or from the `alpha` parameter, never from the seed.
  if (p.loads_precisions) out["precisions"] = {p.heads, 2, 2};
  if (p.loads_alphas) out["alphas"] = {p.heads};
  if (p.key_dim > 0) {
    out["w_qry"] = {p.heads, p.in_channels, p.key_dim};
    out["w_key"] = {p.heads, p.in_channels, p.key_dim};
  }
  return out;
}

// The layer of a case: its tensors (loaded or drawn from the seed), the input,
// and the attention of the reference query over the offsets.
template <class T> struct Analysis {
  GaussianAttention<T> layer;
  Image<T> x;
  std::array<int, 2> kernel{};
  Padding padding;           // applied before attending ("same"), else none
  Image<T> attended;         // the image the layer attends over: x, or x padded with zeros
  std::array<int, 2> query;  // the reference query: the centre pixel of `attended`
  OffsetWeights<T> attention;  // (N_h, H_a, W_a): P_h over the offsets, origin `query`
};

template <class T> OffsetWeights<T> centre_attention(const MhsaLayer<T>& layer, const Image<T>& x, std::array<int, 2>& query) {
  const std::size_t h = x.shape(1), w = x.shape(2);
  query = {int(h - 1) / 2, int(w - 1) / 2};
  const Matrix<T> rows = attention_rows(layer, image_to_tokens(x), h, w, std::size_t(query[0]) * w + std::size_t(query[1]));
  return xt::xtensor<T, 3>(xt::reshape_view(rows, {rows.shape(0), h, w}));
}

template <class T> Analysis<T> analyse(const Case& c, const NearestParams& p) {
  const CaseTensors tensors(c, p.seed);
  const std::size_t heads = p.heads;
  Analysis<T> a;
  a.layer.centers = xt::cast<double>(tensors.get<T, 2>("centers", {heads, 2}));
  a.layer.precisions = xt::zeros<double>({heads, std::size_t(2), std::size_t(2)});
  if (has_case_tensor(c, "precisions")) {
    a.layer.precisions = xt::cast<double>(tensors.get<T, 3>("precisions", {heads, 2, 2}));
  } else {
    const Vector<double> alphas = has_case_tensor(c, "alphas") ? Vector<double>(xt::cast<double>(tensors.get<T, 1>("alphas", {heads})))
                                                               : Vector<double>(xt::ones<double>({heads}) * p.alpha);
    for (std::size_t h = 0; h < heads; ++h) a.layer.precisions(h, 0, 0) = a.layer.precisions(h, 1, 1) = alphas(h);
  }
  a.layer.w_val = tensors.get<T, 3>("w_val", {heads, p.in_channels, p.head_dim});
  a.layer.w_out = tensors.get<T, 2>("w_out", {heads * p.head_dim, p.out_channels});
  a.layer.b_out = tensors.get<T, 1>("b_out", {p.out_channels});
  if (p.key_dim > 0) {
    a.layer.w_qry = tensors.get<T, 3>("w_qry", {heads, p.in_channels, p.key_dim});
    a.layer.w_key = tensors.get<T, 3>("w_key", {heads, p.in_channels, p.key_dim});
  }
  a.x = tensors.get<T, 3>("input", {p.in_channels, std::size_t(p.image[0]), std::size_t(p.image[1])});
  const MhsaLayer<T> eq8 = to_mhsa_layer(a.layer);
  // "auto": the window from the attention over the image itself, so that it
  // does not depend on the padding it decides.
  if (p.kernel.size) a.kernel = *p.kernel.size;
  else a.kernel = smallest_window(centre_attention(eq8, a.x, a.query), a.query, p.mass);
  a.padding = p.pad_first ? same_padding(a.kernel, {1, 1}) : Padding{};
  a.attended = pad(a.x, a.padding, PaddingMode::zeros);
  a.attention = centre_attention(eq8, a.attended, a.query);
  return a;
}

// The (D, H, W) output of the layer on `attended`, cropped back to the image.
template <class T> Image<T> layer_output(const MhsaLayer<T>& layer, const Analysis<T>& a, Engine& ran) {
  const std::size_t h = a.attended.shape(1), w = a.attended.shape(2);
  const EngineResult<T> result = run_mhsa(Engine::auto_, layer, image_to_tokens(a.attended), h, w);
  ran = result.ran;
  const Image<T> y = tokens_to_image(result.y, h, w);
  return xt::view(y, xt::all(), xt::range(a.padding.top, int(h) - a.padding.bottom),
                  xt::range(a.padding.left, int(w) - a.padding.right));
}

// max_abs and rel_l2 on the pixels whose whole window lies inside the image
// (interior) and on the others (the border band).
template <class T> std::array<Difference, 2> split_difference(const Image<T>& actual, const Image<T>& expected,
                                                            std::array<int, 2> kernel) {
  const OffsetWindow window = kernel_window(kernel);
  const int h = int(actual.shape(1)), w = int(actual.shape(2));
  std::vector<double> a[2], e[2];
  for (std::size_t o = 0; o < actual.shape(0); ++o)
    for (int i = 0; i < h; ++i)
      for (int j = 0; j < w; ++j) {
        const bool interior = i + window.first[0] >= 0 && i + window.last[0] < h && j + window.first[1] >= 0 &&
                              j + window.last[1] < w;
        a[interior ? 0 : 1].push_back(double(actual(o, std::size_t(i), std::size_t(j))));
        e[interior ? 0 : 1].push_back(double(expected(o, std::size_t(i), std::size_t(j))));
      }
  const auto diff = [](const std::vector<double>& x, const std::vector<double>& y) {
    return compare(xt::adapt(x, {x.size()}), xt::adapt(y, {y.size()}));
  };
  return {diff(a[0], e[0]), diff(a[1], e[1])};
}

// A head is convolution-like when at least half its attention is on its tap
// and that tap is in the window.
bool convolution_like(const HeadTap& t) { return t.in_window && t.leak <= 0.5; }

std::string verdict_message(const std::vector<HeadTap>& taps, const TapCoverage& coverage, std::array<int, 2> kernel,
                            const Difference& interior, const Difference& border, std::optional<double> content_share) {
  std::ostringstream m;
  const std::string k = std::to_string(kernel[0]) + "x" + std::to_string(kernel[1]);
  m << "The layer is " << short_number(interior.rel_l2) << " (rel_l2) from its nearest " << k
    << " convolution away from the border, " << short_number(border.rel_l2) << " in the border band. ";
  std::vector<std::string> unlike;
  double worst_distance = 0, worst_leak = 0;
  for (std::size_t h = 0; h < taps.size(); ++h) {
    worst_distance = std::max(worst_distance, taps[h].center_distance);
    worst_leak = std::max(worst_leak, taps[h].leak);
    if (!convolution_like(taps[h]))
      unlike.push_back("head " + std::to_string(h) + " (" +
                       (taps[h].in_window ? "leak " + short_number(taps[h].leak)
                                          : "tap (" + std::to_string(taps[h].tap[0]) + ", " +
                                                std::to_string(taps[h].tap[1]) + ") outside the window") +
                       ")");
  }
  if (unlike.empty()) m << "Every head puts most of its attention on one tap";
  else {
    m << unlike.size() << " of " << taps.size() << (unlike.size() == 1 ? " heads is" : " heads are")
      << " not convolution-like:";
    for (std::size_t i = 0; i < unlike.size(); ++i) m << (i ? ", " : " ") << unlike[i];
  }
  m << "; centres at most " << short_number(worst_distance) << " px off the grid, leaks at most "
    << short_number(worst_leak) << "; " << coverage.uncovered << " taps without a head, " << coverage.shared
    << " shared.";
  if (content_share)
    m << " The content terms change the output by " << short_number(*content_share) << " (relative).";
  return m.str();
}

template <class T> Outcome verify(const Case& c, const NearestParams& p) {
  const Analysis<T> a = analyse<T>(c, p);
  const MhsaLayer<T> eq8 = to_mhsa_layer(a.layer);
  Engine ran = Engine::dense;
  const Image<T> actual = layer_output(eq8, a, ran);

  const Kernel<T> w_eff = equivalent_kernel(a.attention, a.layer.w_val, a.layer.w_out);
  const Kernel<T> w_conv = window_kernel(w_eff, a.query, a.kernel);
  const ConvGeometry geometry{.padding = same_padding(a.kernel, {1, 1})};
  const Image<T> expected = conv2d_blocked(a.x, w_conv, std::optional<Vector<T>>(a.layer.b_out), geometry);

  const Difference all = compare(actual, expected);
  const auto [interior, border] = split_difference(actual, expected, a.kernel);
  const std::vector<HeadTap> taps = head_taps(a.attention, a.query, a.layer.centers, a.kernel);
  const TapCoverage coverage = tap_coverage(taps, a.kernel);
  std::optional<double> content_share;
  if (a.layer.w_qry) {
    Engine ignored = Engine::dense;
    const Image<T> positional = layer_output(to_mhsa_layer(a.layer, false), a, ignored);
    content_share = compare(positional, actual).rel_l2;
  }

  Outcome out;
  json tap = json::array(), distance = json::array(), leak = json::array(), outside = json::array();
  int like = 0;
  for (const HeadTap& t : taps) {
    tap.push_back({t.tap[0], t.tap[1]});
    distance.push_back(t.center_distance);
    leak.push_back(t.leak);
    outside.push_back(t.mass_outside);
    like += convolution_like(t) ? 1 : 0;
  }
  set_distance(out, all);
  out.set(metric::max_abs_interior, interior.max_abs);
  out.set(metric::rel_l2_interior, interior.rel_l2);
  out.set(metric::max_abs_border, border.max_abs);
  out.set(metric::rel_l2_border, border.rel_l2);
  out.set(metric::kernel_resolved, {a.kernel[0], a.kernel[1]});
  out.set(metric::tap, tap);
  out.set(metric::center_distance, distance);
  out.set(metric::leak, leak);
  out.set(metric::mass_outside, outside);
  out.set(metric::uncovered_taps, coverage.uncovered);
  out.set(metric::shared_taps, coverage.shared);
  out.set(metric::convolution_like_heads, like);
  out.set(metric::engine, to_string(ran));
  if (content_share) out.set(metric::content_share, *content_share);
  out.message = verdict_message(taps, coverage, a.kernel, interior, border, content_share);
  vacuous_if_zero(out, "the input", a.x, "b_out");
  vacuous_if_zero(out, "W_val (the layer's values)", a.layer.w_val, "b_out");
  vacuous_if_zero(out, "W_out", a.layer.w_out, "b_out");
  out.tensors = conv_tensors<T>(a.x, expected, actual, w_conv, std::optional<Vector<T>>(a.layer.b_out));
  out.tensors.push_back({"attention", xt::xarray<T>(a.attention)});
  for (auto& t : mhsa_layer_tensors(eq8)) out.tensors.push_back(std::move(t));
  return out;
}

// Each head's attention over the attended image for the reference query,
// titled with the tap it is nearest to and its distance.
template <class T> FigureData attention_figure(const Case& c, const NearestParams& p) {
  const Analysis<T> a = analyse<T>(c, p);
  const std::vector<HeadTap> taps = head_taps(a.attention, a.query, a.layer.centers, a.kernel);
  const std::size_t heads = taps.size(), hp = a.attention.shape(1), wp = a.attention.shape(2);
  HeatMapGrid grid;
  const int columns = int(std::ceil(std::sqrt(double(heads))));
  grid.layout = {int((heads + std::size_t(columns) - 1) / std::size_t(columns)), columns};
  int reach = 1;
  for (std::size_t h = 0; h < heads; ++h) {
    reach = std::max({reach, std::abs(taps[h].tap[0]), std::abs(taps[h].tap[1])});
    HeatMap map{.title = "head " + std::to_string(h) + ": (" + std::to_string(taps[h].tap[0]) + ", " +
                         std::to_string(taps[h].tap[1]) + "), " + short_number(taps[h].center_distance) + " px",
                .values = xt::cast<double>(xt::view(a.attention, h))};
    grid.panels.push_back(std::move(map));
  }
  reach = std::max({reach, a.kernel[0], a.kernel[1]}) + 1;
  grid.range = {0, std::max(1e-300, double(xt::amax(a.attention)()))};
  const int qi = a.query[0], qj = a.query[1];
  grid.marker = std::array<int, 2>{qi, qj};
  grid.window = std::array<int, 4>{std::max(0, qi - reach), std::min(int(hp) - 1, qi + reach),
                                   std::max(0, qj - reach), std::min(int(wp) - 1, qj + reach)};
  const std::string title = c.name + ": attention for query (" + std::to_string(qi) + ", " + std::to_string(qj) +
                            ") (red box)\nhead: its nearest tap, |Delta - tap|; " + std::to_string(a.kernel[0]) + "x" +
                            std::to_string(a.kernel[1]) + " window";
  return {.name = "attention-" + c.name, .title = title, .content = std::move(grid)};
}

std::vector<FigureData> figures(const Case& c, const NearestParams& p, const json& /*metrics*/) {
  return {with_dtype(p.dtype, [&](auto tag) { return attention_figure<decltype(tag)>(c, p); })};
}

// Bytes at the peak (s bytes an element). The image attended over has n pixels: the image ("padding":
// "none"), or it padded "same" for the window (an "auto" window is at most the image: 2H-1 x 2W-1).
double memory_estimate(const Case&, const NearestParams& p) {
  const double s = double(dtype_bytes(p.dtype)), heads = double(p.heads), d_h = double(p.head_dim);
  const double c_in = double(p.in_channels), c_out = double(p.out_channels), d_k = double(p.key_dim);
  const std::array<int, 2> k = p.kernel.size ? *p.kernel.size : p.image;
  const std::array<double, 2> side{p.pad_first ? double(p.image[0] + (p.kernel.size ? k[0] : 2 * k[0]) - 1) : double(p.image[0]),
                                   p.pad_first ? double(p.image[1] + (p.kernel.size ? k[1] : 2 * k[1]) - 1) : double(p.image[1])};
  const double n = side[0] * side[1], window = double(k[0]) * double(k[1]);
  const double m_h = 8 * heads * c_in * c_out;                 // equivalent_kernel: M_h = W_val^h W_out^h in double
  const double w_eff = s * c_out * c_in * n;                   // the equivalent kernel over every offset
  const double w_conv = 2 * s * c_out * c_in * window;         // its window and the dumped copy
  const double attention = 3 * s * heads * n;                  // P_h over the offsets, its rows, the dumped copy
  const double layer = 3 * s * heads * (c_in * (d_h + 2 * d_k) + d_h * c_out + 8);  // the layer, as MHSA, dumped
  const double engine = engine_memory_bytes(Engine::dense, std::size_t(side[0]), std::size_t(side[1]), p.in_channels,
                                            p.key_dim + 5, p.head_dim, p.out_channels, std::size_t(s)) +
                        s * n * heads * d_h;                   // the MHSA (dense at worst) and its heads' values
  const double images = s * n * (4 * c_in + 6 * c_out);        // input, padded, tokens; outputs, crops, dumps
  return process_bytes + m_h + w_eff + w_conv + attention + layer + engine + images;
}

using P = NearestParams;
const bool registered = register_proof(make_proof<P>({
    .id = "cordonnier2020.nearest_convolution",
    .paper = cordonnier2020("Section 4 (learned quadratic attention) against Theorem 1"),
    .statement = "An attention layer whose heads attend around centres Delta_h with positional score "
                 "-(delta - Delta_h)^T A_h (delta - Delta_h) is, away from the border and without content terms, "
                 "exactly the convolution of its equivalent kernel W_eff[:, :, delta] = sum_h P_h(delta) "
                 "(W_val^h W_out^h)^T; it is within the case's tolerance of the K1 x K2 window of that kernel, "
                 "its nearest K1 x K2 convolution.",
    .params =
        {field(&P::image, {.name = "image", .help = "image size [H, W]", .minimum = 1}),
         field(&P::in_channels, size_param("in_channels", "D_in", 4096)),
         field(&P::out_channels, size_param("out_channels", "D_out", 4096)),
         field(&P::heads, size_param("heads", "N_h", 4096)), field(&P::head_dim, size_param("head_dim", "D_h", 4096)),
         field(&P::key_dim, {.name = "key_dim",
                             .help = "D_k of the content terms w_qry, w_key; 0: positional heads only",
                             .default_value = 0,
                             .minimum = 0,
                             .maximum = 4096}),
         field(&P::pad_first,
               {.name = "padding",
                .help = "how the layer is applied: \"none\" attends over the image as it is (the softmax "
                        "renormalises over the keys that exist), \"same\" pads it with zeros by the window's "
                        "'same' padding first and crops the output back (as in Theorem 1)",
                .default_value = false,
                .named = {{"none", false}, {"same", true}}}),
         field(&P::kernel, {.name = "kernel",
                            .help = "the window [K1, K2] of the nearest convolution, or \"auto\": the smallest "
                                    "holding at least `mass` of every head's attention",
                            .default_value = AutoPair{},
                            .minimum = 1,
                            .maximum = 4096}),
         field(&P::mass, {.name = "mass",
                          .help = "for kernel \"auto\": the least attention of every head inside the window",
                          .default_value = 0.99,
                          .minimum = 0,
                          .exclusive_minimum = true,
                          .maximum = 1}),
         field(&P::alpha, {.name = "alpha",
                           .help = "A_h = alpha I for every head when the case loads neither precisions nor alphas",
                           .default_value = 1.0,
                           .minimum = 0}),
         field(&P::dtype, dtype_param()), field(&P::seed, seed_param("seed of the tensors the case does not load"))},
    .tensors = tensor_names,
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = distance_metrics(
        "the layer against its nearest K1 x K2 convolution, over the whole image",
        {metric::max_abs_interior, metric::rel_l2_interior, metric::max_abs_border, metric::rel_l2_border,
         metric::kernel_resolved, metric::tap, metric::center_distance, metric::leak, metric::mass_outside,
         metric::uncovered_taps, metric::shared_taps, metric::convolution_like_heads,
         metric::engine.described("the MHSA engine that ran (auto: separable where exact)"), metric::content_share}),
    .dumps = mhsa_layer_dumps("(delta1^2, delta2^2, delta1 delta2, delta1, delta2) (quadratic_general), on the "
                              "input zero-padded \"same\" for metrics.kernel_resolved with \"padding\": \"same\"",
                              {{"input", "(C_in, H, W)"},
                               {"conv_weight", "(C_out, C_in, K1, K2): the nearest convolution, loadable into torch.nn.Conv2d"},
                               {"conv_bias", "(C_out)"},
                               {"expected", "the nearest convolution's output"},
                               {"actual", "the layer's output"},
                               {"attention", "(N_h, H, W): each head's attention for the reference query"}}),
    .memory_estimate = memory_estimate,
    .expected_tensors = expected_tensors,
    .figures = figures,
}));

}  // namespace
}  // namespace attnconv
