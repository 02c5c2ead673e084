// Hassani, Walton, Li, Li & Shi, "Neighborhood Attention Transformer", CVPR 2023:
// each query attends to its window of NATTEN's rule (src/local/neighborhood_attention.hpp:
// window w per axis, odd or even, stride s, dilation d, causal or not), with a
// relative position bias rpb (heads, 2 w1 - 1, 2 w2 - 1) (NATTEN 0.17's; current
// NATTEN has none: here it is the construction's score). Checked against
// convolution (docs/design.md, "Local attention"):
//  1. with the window as large as the image (the top-left L x L crop, L the
//     largest odd side that fits), neighborhood attention is global self-attention:
//     against the dense engine on a layer with random content and positional terms;
//  2. with Cordonnier's construction as the bias (rpb_h(delta) = -alpha |delta - Delta_h|^2,
//     no content terms, K <= w), Delta_h the kernel taps the window holds (per axis
//     -floor(K/2) .. ceil(K/2) - 1 around the query, -(K - 1) .. 0 when causal), on
//     the input zero-padded by those taps, it is that convolution (the causal one:
//     left-padded by (K - 1) d) up to the finite-alpha bound of Theorem 1 over the
//     window, on every pixel whose taps all lie in its window (all of them for stride 1);
//  3. stride 1: without the padding it differs from the padded convolution in a
//     border band of the taps' reach per side (measured per side, and the error
//     there), and against global attention's band (cordonnier2020.padding_remark)
//     on the same weights; when alpha is so small that the bound exceeds the
//     band's error, the band cannot be seen and is not judged (the message says so);
//  4. stride = window, not causal: blocked (non-overlapping window) attention on
//     every query whose block lies inside its axis (random content terms and rpb).
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
#include "reference/conv.hpp"
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
const Metric expressed_max_abs{.name = "expressed_max_abs",
                               .help = "check 2: max_abs on the pixels whose taps all lie in their window (all of "
                                       "them for stride 1)",
                               .error = true};
const Metric expressed_fraction_predicted{
    .name = "expressed_fraction_predicted",
    .help = "check 2: the fraction of pixels whose taps all lie in their window (1 for stride 1)"};
const Metric unexpressed_min_abs{.name = "unexpressed_min_abs",
                                 .help = "check 2: the smallest error on the other pixels; null when there are none",
                                 .nullable = true};
const Metric taps{.name = "taps",
                  .type = MetricType::array,
                  .help = "the kernel taps around the query per axis [[first, last] rows, [first, last] columns], in "
                          "units of d: what the window holds"};
const Metric unpadded_max_abs{.name = "unpadded_max_abs", .help = "check 3: max_abs without padding, band included"};
const Metric unpadded_bound{.name = "unpadded_bound",
                            .help = "check 3: the bound on the unpadded image (agreement per pixel)"};
const Metric band_visible{.name = "band_visible",
                          .type = MetricType::boolean,
                          .help = "check 3 is judged: stride 1 and the bound on the unpadded image below every "
                                  "error in the predicted band (else alpha is too small to see the band)"};
const Metric global_band_sides{
    .name = "global_band_sides",
    .type = MetricType::array,
    .help = "global attention's band on the unpadded image (cordonnier2020.padding_remark), same weights",
    .nullable = true};
const Metric global_band_max_abs{.name = "global_band_max_abs", .help = "global attention's error in its band"};
const Metric versus_global_max_abs{
    .name = "versus_global_max_abs",
    .help = "unpadded neighborhood attention against unpadded global attention, whole image"};
const Metric versus_truncated_max_abs{
    .name = "versus_truncated_max_abs",
    .help = "unpadded neighborhood attention against a plain truncated window (the query's w keys around it, those "
            "outside the image dropped, no clamping, no stride): where NATTEN's rule shows"};
const Metric blocked_max_abs{.name = "blocked_max_abs",
                             .help = "check 4 (stride = window, not causal): against blocked attention on the queries "
                                     "whose block lies inside the axis",
                             .always = false,
                             .error = true};
const Metric blocked_partial_max_abs{
    .name = "blocked_partial_max_abs",
    .help = "check 4: on the queries of a last, incomplete block (NATTEN clamps their window instead); null: none",
    .always = false,
    .nullable = true};
const Metric blocked_allowance{.name = "blocked_allowance", .help = "check 4: the round-off allowance", .always = false};
}  // namespace
}  // namespace metric

namespace {

struct NeighborhoodParams {
  ConvShape shape;
  std::array<int, 2> window{0, 0}, stride{1, 1}, dilation{1, 1};
  std::array<bool, 2> causal{false, false};
  Theorem1Shared shared;
  Dtype dtype = Dtype::float64;

  Neighborhood axes() const {
    Neighborhood n;
    for (std::size_t a = 0; a < 2; ++a)
      n[a] = {.window = window[a], .stride = stride[a], .dilation = dilation[a], .causal = causal[a]};
    return n;
  }
  bool strided() const { return stride[0] > 1 || stride[1] > 1; }
  bool blocked() const { return stride == window && !causal[0] && !causal[1]; }
};

// The taps before the query a window holds of a K-tap kernel along an axis:
// K - 1 when causal (the window ends at the query), else floor(K / 2) (an even
// window holds one key more before the centre than after it).
int taps_before(int kernel, bool causal) { return causal ? kernel - 1 : kernel / 2; }

void check(NeighborhoodParams& p, const Case&, const Request&) {
  for (std::size_t a = 0; a < 2; ++a) {
    const int kernel = p.shape.kernel[a];
    if (p.window[a] == 0) p.window[a] = kernel;
    if (p.window[a] < kernel)
      throw ParamError("window", "the window must be at least the kernel " + std::to_string(kernel) +
                                     " on each axis (check 2 needs every tap inside it), got " +
                                     std::to_string(p.window[a]));
    if (p.stride[a] > p.window[a])
      throw ParamError("stride", "NATTEN needs stride <= window on each axis, got stride " +
                                     std::to_string(p.stride[a]) + " and window " + std::to_string(p.window[a]));
    if (p.shape.image[a] < p.window[a] * p.dilation[a])
      throw ParamError("image", "NATTEN needs every side >= window * dilation = " +
                                    std::to_string(p.window[a] * p.dilation[a]) + " (the unpadded window of check 3)");
  }
}

TensorShapes expected_tensors(const NeighborhoodParams& p) {
  TensorShapes shapes = local_conv_tensor_shapes(p.shape, p.shared.bias);
  const std::size_t heads = std::size_t(p.shape.kernel[0] * p.shape.kernel[1]), c_in = p.shape.in_channels;
  shapes["w_qry"] = shapes["w_key"] = {heads, c_in, c_in};
  shapes["v_pos"] = {heads, 3};
  return shapes;
}

// Delta_h of head h = p K2 + q: the tap (p, q) relative to the query, in units of d.
std::array<int, 2> tap_shift(int h, const NeighborhoodParams& p) {
  const std::array<int, 2> kernel = p.shape.kernel;
  return {h / kernel[1] - taps_before(kernel[0], p.causal[0]), h % kernel[1] - taps_before(kernel[1], p.causal[1])};
}

// rpb_h(delta) = -alpha |delta - Delta_h|^2, delta in units of the dilation, over (2 w1 - 1, 2 w2 - 1).
template <class T> xt::xtensor<T, 3> construction_rpb(const NeighborhoodParams& p, double alpha) {
  const int heads = p.shape.kernel[0] * p.shape.kernel[1], span1 = 2 * p.window[0] - 1, span2 = 2 * p.window[1] - 1;
  xt::xtensor<T, 3> rpb({std::size_t(heads), std::size_t(span1), std::size_t(span2)});
  for (int h = 0; h < heads; ++h)
    for (int e1 = 0; e1 < span1; ++e1)
      for (int e2 = 0; e2 < span2; ++e2)
        rpb(std::size_t(h), std::size_t(e1), std::size_t(e2)) =
            T(quadratic_bias({e1 - p.window[0] + 1, e2 - p.window[1] + 1}, tap_shift(h, p), alpha));
  return rpb;
}

template <class T> HeadMaps<T> zero_maps(const HeadMaps<T>& like) {
  return xt::zeros<T>({like.shape(0), like.shape(1), like.shape(2), std::size_t(1)});
}

// The convolution the window holds: the kernel's taps around the query zero-padded
// (taps before, taps after) times d per axis.
Padding tap_padding(const NeighborhoodParams& p) {
  std::array<int, 4> sides{};
  for (std::size_t a = 0; a < 2; ++a) {
    const int before = taps_before(p.shape.kernel[a], p.causal[a]);
    sides[2 * a] = before * p.dilation[a];
    sides[2 * a + 1] = (p.shape.kernel[a] - 1 - before) * p.dilation[a];
  }
  return {sides[0], sides[1], sides[2], sides[3]};
}

// Per axis, whether the query at `offset + i` of an axis of `length` holds every
// tap target offset + i + (t - before) d, 0 <= t < K, among its keys.
std::vector<bool> taps_held(int size, int offset, int length, int kernel, const NeighborhoodAxis& axis) {
  const int before = taps_before(kernel, axis.causal), d = axis.dilation;
  std::vector<bool> held(static_cast<std::size_t>(size), false);
  for (int i = 0; i < size; ++i) {
    const AxisKeys keys = neighborhood_keys(offset + i, length, axis);
    const int first_target = offset + i - before * d, last_target = first_target + (kernel - 1) * d;
    held[std::size_t(i)] = first_target >= keys.first && last_target <= keys.first + (keys.count - 1) * d;
  }
  return held;
}

// A plain truncated window: the query's keys i + t d, -window_left <= t <= window_right
// (-(w - 1) <= t <= 0 when causal), those outside the image dropped; no clamping, no stride.
template <class T>
HeadMaps<T> truncated_attention(const HeadMaps<T>& v, const xt::xtensor<T, 3>& rpb, const Neighborhood& axes) {
  const int heads = int(v.shape(0)), height = int(v.shape(1)), width = int(v.shape(2)), d_v = int(v.shape(3));
  HeadMaps<T> out = xt::zeros<T>(v.shape());
  const auto range = [](const NeighborhoodAxis& axis) {
    return axis.causal ? std::array<int, 2>{1 - axis.window, 0}
                       : std::array<int, 2>{-window_left(axis.window), window_right(axis.window)};
  };
  const auto r1 = range(axes[0]), r2 = range(axes[1]);
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < height; ++i)
      for (int j = 0; j < width; ++j) {
        std::vector<std::array<int, 2>> keys;
        std::vector<T> weight;
        for (int t1 = r1[0]; t1 <= r1[1]; ++t1)
          for (int t2 = r2[0]; t2 <= r2[1]; ++t2) {
            const int ki = i + t1 * axes[0].dilation, kj = j + t2 * axes[1].dilation;
            if (ki < 0 || ki >= height || kj < 0 || kj >= width) continue;
            keys.push_back({ki, kj});
            weight.push_back(rpb(h, t1 + axes[0].window - 1, t2 + axes[1].window - 1));
          }
        const T largest = *std::max_element(weight.begin(), weight.end());
        T total = 0;
        for (T& s : weight) total += s = std::exp(s - largest);
        for (std::size_t n = 0; n < keys.size(); ++n)
          for (int c = 0; c < d_v; ++c) out(h, i, j, c) += weight[n] / total * v(h, keys[n][0], keys[n][1], c);
      }
  return out;
}

// Check 4's blocked attention: the keys of a query are the pixels of its block
// (per axis the same dilation group and floor(i' / w) on it), softmax of q.k + rpb.
template <class T>
HeadMaps<T> blocked_attention(const HeadMaps<T>& q, const HeadMaps<T>& k, const HeadMaps<T>& v,
                              const xt::xtensor<T, 3>& rpb, const Neighborhood& axes) {
  const int heads = int(q.shape(0)), height = int(q.shape(1)), width = int(q.shape(2));
  const int d_k = int(q.shape(3)), d_v = int(v.shape(3));
  const auto same_block = [](int a, int b, const NeighborhoodAxis& axis) {
    return a % axis.dilation == b % axis.dilation && a / axis.dilation / axis.window == b / axis.dilation / axis.window;
  };
  HeadMaps<T> out = xt::zeros<T>(v.shape());
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < height; ++i)
      for (int j = 0; j < width; ++j) {
        std::vector<std::array<int, 2>> keys;
        std::vector<T> score;
        for (int ki = 0; ki < height; ++ki)
          for (int kj = 0; kj < width; ++kj) {
            if (!same_block(i, ki, axes[0]) || !same_block(j, kj, axes[1])) continue;
            T s = rpb(h, (ki - i) / axes[0].dilation + axes[0].window - 1, (kj - j) / axes[1].dilation + axes[1].window - 1);
            for (int c = 0; c < d_k; ++c) s += q(h, i, j, c) * k(h, ki, kj, c);
            keys.push_back({ki, kj});
            score.push_back(s);
          }
        const T largest = *std::max_element(score.begin(), score.end());
        T total = 0;
        for (T& s : score) total += s = std::exp(s - largest);
        for (std::size_t n = 0; n < keys.size(); ++n)
          for (int c = 0; c < d_v; ++c) out(h, i, j, c) += score[n] / total * v(h, keys[n][0], keys[n][1], c);
      }
  return out;
}

// Whether query i's block (floor(i' / w) on its dilation group of n positions) lies inside the axis.
bool block_complete(int index, int length, const NeighborhoodAxis& axis) {
  const int phase = index % axis.dilation, n = (length - phase + axis.dilation - 1) / axis.dilation;
  return (index / axis.dilation / axis.window + 1) * axis.window <= n;
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

// Check 4: strided neighborhood attention with stride = window against blocked
// attention, on check 1's content weights over the whole image and the bias
// v_pos . r_delta over the window's offsets, per head (before W_out).
struct BlockedCheck {
  double max_abs = 0, allowance = 0;
  std::optional<double> partial_max_abs;
};
template <class T>
BlockedCheck blocked_check(const MhsaLayer<T>& layer, const Image<T>& x, const CaseTensors& tensors,
                           const Neighborhood& axes) {
  const std::size_t c_in = x.shape(0), heads = layer.heads.size();
  const xt::xtensor<T, 3> w_qry = tensors.get<T, 3>("w_qry", {heads, c_in, c_in});
  const xt::xtensor<T, 3> w_key = tensors.get<T, 3>("w_key", {heads, c_in, c_in});
  const Matrix<T> v_pos = tensors.get<T, 2>("v_pos", {heads, std::size_t(3)});
  const int w1 = axes[0].window, w2 = axes[1].window;
  xt::xtensor<T, 3> rpb({heads, std::size_t(2 * w1 - 1), std::size_t(2 * w2 - 1)});
  for (std::size_t h = 0; h < heads; ++h)
    for (int e1 = 0; e1 < 2 * w1 - 1; ++e1)
      for (int e2 = 0; e2 < 2 * w2 - 1; ++e2) {
        T r[3];
        relative_encoding(Encoding::quadratic, e1 - w1 + 1, e2 - w2 + 1, r);
        rpb(h, std::size_t(e1), std::size_t(e2)) = v_pos(h, 0) * r[0] + v_pos(h, 1) * r[1] + v_pos(h, 2) * r[2];
      }
  const ContentMaps<T> content = content_maps(x, w_qry, w_key);
  const HeadMaps<T> values = head_values(layer, x);
  const HeadMaps<T> strided = neighborhood_attention(content.q, content.k, values, rpb, axes);
  const HeadMaps<T> blocked = blocked_attention(content.q, content.k, values, rpb, axes);
  BlockedCheck out;
  for (std::size_t h = 0; h < heads; ++h)
    for (int i = 0; i < int(x.shape(1)); ++i)
      for (int j = 0; j < int(x.shape(2)); ++j) {
        const bool complete = block_complete(i, int(x.shape(1)), axes[0]) && block_complete(j, int(x.shape(2)), axes[1]);
        for (std::size_t c = 0; c < values.shape(3); ++c) {
          const double d = std::abs(double(strided(h, i, j, c)) - double(blocked(h, i, j, c)));
          if (complete) out.max_abs = std::isnan(d) ? d : std::max(out.max_abs, d);
          else out.partial_max_abs = std::max(out.partial_max_abs.value_or(0.0), d);
        }
      }
  // Round-off: scores of C_in products and the bias (|v_pos| |r|), the maximum, the exp; sums over a block.
  const double q_max = double(xt::amax(xt::abs(content.q))()), k_max = double(xt::amax(xt::abs(content.k))());
  const double r_max = double((w1 - 1) * (w1 - 1) + (w2 - 1) * (w2 - 1) + w1 + w2);
  const double score_scale = double(c_in) * q_max * k_max + double(xt::sum(xt::abs(v_pos))()) * r_max;
  const double value_scale = double(xt::amax(xt::abs(values))());
  out.allowance = softmax_roundoff(double(c_in + 4 + 2), double(w1 * w2), std::numeric_limits<T>::epsilon() / 2,
                                   score_scale, value_scale, value_scale);
  return out;
}

template <class T> Outcome verify(const Case& c, const NeighborhoodParams& p) {
  const int height = p.shape.image[0], width = p.shape.image[1];
  const std::array<int, 2> kernel = p.shape.kernel;
  const Neighborhood axes = p.axes();
  const CaseTensors tensors(c, p.shared.seed);
  // The convolution of the taps the window holds, and the construction's values
  // and output projection (Theorem 1's layer; Delta in units of d, in the bias).
  const Image<T> x = tensors.get<T, 3>("input", p.shape.input());
  const Kernel<T> w = tensors.get<T, 4>("conv_weight", p.shape.weight());
  const std::optional<Vector<T>> b = tensors.conv_bias<T>(p.shared.bias, p.shape.out_channels);
  const Padding padding = tap_padding(p);
  ConvGeometry geometry;
  geometry.dilation = p.dilation;
  geometry.padding = padding;
  const Image<T> expected = reference::conv2d(x, w, b, geometry);
  Theorem1Options options;
  options.heads = kernel[0] * kernel[1];
  options.head_dim = int(p.shape.out_channels);
  options.alpha = p.shared.alpha;
  const MhsaLayer<T> layer = theorem1_layer(w, b, options);
  const xt::xtensor<T, 3> rpb = construction_rpb<T>(p, options.alpha);
  const auto attend = [&](const Image<T>& image) {
    const HeadMaps<T> values = head_values(layer, image);
    return project_heads(layer, neighborhood_attention(zero_maps(values), zero_maps(values), values, rpb, axes));
  };

  // 2. Zero-pad by the taps, attend, crop; the pixels whose taps all lie in their window.
  const Image<T> x_pad = pad(x, padding, PaddingMode::zeros);
  const Image<T> padded_out = attend(x_pad);
  const Image<T> actual = xt::view(padded_out, xt::all(), xt::range(padding.top, padding.top + height),
                                   xt::range(padding.left, padding.left + width));
  // The keys of a window are at most w1 x w2 offsets of the query (in units of d): the bound over the window.
  const FiniteAlphaBound bound = construction_bound(layer, image_to_tokens(x_pad), std::size_t(p.window[0]),
                                                    std::size_t(p.window[1]), kernel, options);
  const Difference padded = compare(actual, expected);
  const std::vector<bool> rows_held = taps_held(height, padding.top, int(x_pad.shape(1)), kernel[0], axes[0]);
  const std::vector<bool> cols_held = taps_held(width, padding.left, int(x_pad.shape(2)), kernel[1], axes[1]);
  const xt::xtensor<double, 2> padded_difference = pixel_difference(actual, expected);
  double expressed_max = 0, expressed = 0;
  std::optional<double> unexpressed_min;
  for (int i = 0; i < height; ++i)
    for (int j = 0; j < width; ++j) {
      const double d = padded_difference(std::size_t(i), std::size_t(j));
      if (rows_held[std::size_t(i)] && cols_held[std::size_t(j)])
        expressed_max = std::isnan(d) ? d : std::max(expressed_max, d), ++expressed;
      else
        unexpressed_min = std::min(unexpressed_min.value_or(INFINITY), d);
    }
  const double padded_bound = bound(options.alpha);

  // 3. No padding: the clamped window against the padded convolution.
  const Image<T> unpadded = attend(x);
  const FiniteAlphaBound unpadded_bound = construction_bound(layer, image_to_tokens(x), std::size_t(p.window[0]),
                                                             std::size_t(p.window[1]), kernel, options);
  const double threshold = unpadded_bound(options.alpha);
  const xt::xtensor<double, 2> unpadded_difference = pixel_difference(unpadded, expected);
  const BorderBand band = measure_band(unpadded_difference, threshold);
  const std::array<int, 4> band_expected{padding.top, padding.bottom, padding.left, padding.right};
  // The band can be seen at this alpha when the bound separates every pixel of
  // the predicted band from the interior: its smallest error is above the bound.
  double predicted_band_min = INFINITY, predicted_band_max = 0;
  for (int i = 0; i < height; ++i)
    for (int j = 0; j < width; ++j)
      if (i < padding.top || i >= height - padding.bottom || j < padding.left || j >= width - padding.right) {
        const double d = unpadded_difference(std::size_t(i), std::size_t(j));
        predicted_band_min = std::min(predicted_band_min, d), predicted_band_max = std::max(predicted_band_max, d);
      }
  const bool visible = !p.strided() && !(predicted_band_min <= threshold);  // no band: +inf; NaN: judged (and fails)
  // Global attention on the unpadded image (the padding remark), same weights, dilation and taps.
  Theorem1Options global_options = options;
  global_options.dilation = p.dilation;
  MhsaLayer<T> global_layer = theorem1_layer(w, b, global_options);
  for (int h = 0; h < options.heads; ++h) {
    const std::array<int, 2> shift = tap_shift(h, p);  // v = -alpha (1, -2 Delta1 d1, -2 Delta2 d2)
    global_layer.heads[std::size_t(h)].v(1) = T(-options.alpha * (-2.0 * shift[0] * p.dilation[0]));
    global_layer.heads[std::size_t(h)].v(2) = T(-options.alpha * (-2.0 * shift[1] * p.dilation[1]));
  }
  const Image<T> global = tokens_to_image(mhsa_dense(global_layer, image_to_tokens(x), std::size_t(height), std::size_t(width)),
                                          std::size_t(height), std::size_t(width));
  const BorderBand global_band = measure_band(pixel_difference(global, expected), threshold);
  const Difference versus_global = compare(unpadded, global);
  const Image<T> truncated = project_heads(layer, truncated_attention(head_values(layer, x), rpb, axes));
  const Difference versus_truncated = compare(unpadded, truncated);

  // 1. The window as large as the image: global attention.
  const GlobalCheck<T> g = global_check(layer, x, tensors);

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
  out.set(metric::expressed_max_abs, expressed_max);
  out.set(metric::expressed_fraction_predicted, expressed / double(height * width));
  out.set(metric::unexpressed_min_abs, unexpressed_min ? json(*unexpressed_min) : json(nullptr));
  const int before1 = taps_before(kernel[0], p.causal[0]), before2 = taps_before(kernel[1], p.causal[1]);
  out.set(metric::taps, json::array({json::array({-before1, kernel[0] - 1 - before1}),
                                     json::array({-before2, kernel[1] - 1 - before2})}));
  out.set(metric::unpadded_max_abs, compare(unpadded, expected).max_abs);
  out.set(metric::interior_max_abs, band.interior_max);
  out.set(metric::unpadded_bound, threshold);
  out.set(metric::band_visible, visible);
  out.set(metric::band_sides, band.sides_json());
  out.set(metric::band_sides_expected, band_expected);
  out.set(metric::band_error, band.error(band_expected));
  out.set(metric::band_exceptions, band.exceptions);
  out.set(metric::band_max_abs, band.band_max);
  out.set(metric::global_band_sides, global_band.sides_json());
  out.set(metric::global_band_max_abs, global_band.band_max);
  out.set(metric::versus_global_max_abs, versus_global.max_abs);
  out.set(metric::versus_truncated_max_abs, versus_truncated.max_abs);

  // The claims judged: check 1; check 2 on every pixel (stride 1) or on those
  // whose taps lie in their window; check 3 when stride 1 and the band can be
  // seen; check 4 when stride = window.
  const bool all_expressed = expressed == double(height * width);
  const Metric& padded_metric = all_expressed ? metric::max_abs : metric::expressed_max_abs;
  json tolerance_default = tolerance({{padded_metric, padded_bound}, {metric::global_max_abs, g.allowance}});
  json tolerance_roundoff =
      tolerance({{padded_metric, bound.roundoff(options.alpha)}, {metric::global_max_abs, g.allowance}});
  if (visible) {
    tolerance_default.update(tolerance({{metric::interior_max_abs, threshold}, {metric::band_error, 0}}));
    tolerance_roundoff.update(
        tolerance({{metric::interior_max_abs, unpadded_bound.roundoff(options.alpha)}, {metric::band_error, 0}}));
  }
  std::string blocked_words;
  if (p.blocked() && p.strided()) {
    const BlockedCheck blocked = blocked_check(layer, x, tensors, axes);
    out.set(metric::blocked_max_abs, blocked.max_abs);
    out.set(metric::blocked_partial_max_abs,
            blocked.partial_max_abs ? json(*blocked.partial_max_abs) : json(nullptr));
    out.set(metric::blocked_allowance, blocked.allowance);
    tolerance_default.update(tolerance({{metric::blocked_max_abs, blocked.allowance}}));
    tolerance_roundoff.update(tolerance({{metric::blocked_max_abs, blocked.allowance}}));
    blocked_words = "; stride = window: blocked attention on every complete block (" +
                    short_number(blocked.max_abs) + ")" +
                    (blocked.partial_max_abs ? ", the last incomplete block differs by " +
                                                   short_number(*blocked.partial_max_abs) +
                                                   " (NATTEN clamps its window to the last w pixels)"
                                             : std::string(", every block complete"));
  }
  out.default_tolerance = tolerance_default;
  out.roundoff_tolerance = tolerance_roundoff;

  const std::string taps_words = "the window " + json(p.window).dump() + " holds the taps " + out.get(metric::taps).dump();
  std::string band_words;
  if (p.strided())
    band_words = "stride " + json(p.stride).dump() + ": a query takes its stride group leader's window, so only " +
                 short_number(expressed / double(height * width)) + " of the pixels hold all their taps (within the "
                 "bound: " + short_number(expressed_max) + "); the border band of check 3 is for stride 1 and is not judged";
  else if (!visible)
    band_words = "unpadded: at alpha = " + short_number(options.alpha) + " the bound on the unpadded image, " +
                 short_number(threshold) + ", is not below the smallest error in the predicted band, " +
                 short_number(predicted_band_min) + " (largest " + short_number(predicted_band_max) + "): the band cannot "
                 "be told from the interior at this alpha, so band_sides is measured but not judged (the padded "
                 "check and the bound are)";
  else
    band_words = "unpadded: a border band of " + band.sides_json().dump() + " (expected " + json(band_expected).dump() +
                 ") where a head whose target is missing attends to the nearest pixel of its clamped window instead "
                 "of the zero padding, error up to " + short_number(band.band_max) + "; unpadded global attention (the "
                 "padding remark) on the same weights has the band " + global_band.sides_json().dump() +
                 " and differs from it by " + short_number(versus_global.max_abs);
  out.message = "padded: the convolution within the bound over the window (" + taps_words + "); " + band_words +
                "; against a plain truncated window: " + short_number(versus_truncated.max_abs) + blocked_words;
  vacuous_if_zero(out, "the input", x, "the bias");
  vacuous_if_zero(out, "conv_weight (the convolution, and so the layer's values)", w, "the bias");
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
// Bytes at the peak, s bytes an element, K = K1 K2 heads of dim C_out, n pixels of the image padded by
// the taps (at most (H + K1 d1)(W + K2 d2)): the per-head maps (local/head_tensor.hpp, heads x pixels x
// dim: the values, the zero queries and keys, the attended output, check 1's content queries, keys,
// values and output, about 6 K n (C_in + C_out)), the layers (the construction, the global one, check
// 1's, each K (C_in C_out + C_out^2), its W_qry, W_key 2 K C_in^2), the images and their copies
// (10 n (C_in + C_out)), and global attention on the image (the dense engine).
double memory_estimate(const Case&, const P& p) {
  const double s = double(dtype_bytes(p.dtype)), heads = double(p.shape.kernel[0]) * p.shape.kernel[1];
  const double c_in = double(p.shape.in_channels), c_out = double(p.shape.out_channels);
  const double n = double(p.shape.image[0] + p.shape.kernel[0] * p.dilation[0]) *
                   double(p.shape.image[1] + p.shape.kernel[1] * p.dilation[1]);
  const double maps = 6 * heads * n * (c_in + c_out);
  const double layers = 3 * heads * (c_in * c_out + c_out * c_out) + 2 * heads * c_in * c_in;
  const double engine =
      engine_memory_bytes(Engine::dense, std::size_t(p.shape.image[0]), std::size_t(p.shape.image[1]),
                          p.shape.in_channels, p.shape.in_channels + 3, p.shape.out_channels, p.shape.out_channels, std::size_t(s));
  return process_bytes + s * (maps + layers + 10 * n * (c_in + c_out)) + engine;
}

const bool registered = register_proof(make_proof<P>({
    .id = "hassani2023.neighborhood_attention",
    .paper = "Hassani, Walton, Li, Li & Shi, Neighborhood Attention Transformer, CVPR 2023 (NATTEN's current window "
             "rule: window, stride, dilation, causal; NATTEN 0.17's rpb), against Cordonnier, Loukas & Jaggi, ICLR "
             "2020, Theorem 1",
    .statement = "Neighborhood attention with the window as large as the image is global self-attention; with "
                 "Cordonnier's quadratic bias rpb_h(delta) = -alpha |delta - Delta_h|^2 and no content terms, Delta_h "
                 "the taps a window holds (per axis -floor(K/2) .. ceil(K/2) - 1, or -(K - 1) .. 0 when causal), on the "
                 "input zero-padded by those taps, it is that K1 x K2 convolution (the causal one: left-padded by "
                 "(K - 1) d) as alpha -> infinity, within the finite-alpha bound over the window, on every pixel whose "
                 "taps all lie in its window (every pixel for stride 1); with stride 1 and without the padding it "
                 "differs from the padded convolution exactly in a border band of the taps' reach per side (judged "
                 "when the bound is below the band's error); with stride = window (not causal) it is blocked "
                 "attention on every complete block.",
    .params = {nested(&P::shape,
                      conv_shape({.kernel_help = "convolution kernel [K1, K2] (odd or even); heads = K1 K2, head_dim = "
                                                 "out_channels",
                                  .in_help = "D_in",
                                  .out_help = "D_out",
                                  .groups = false})),
               field(&P::window, {.name = "window",
                                  .help = "neighborhood window w or [w1, w2] (odd or even, >= the kernel; 0: the kernel)",
                                  .default_value = std::array<int, 2>{0, 0},
                                  .minimum = 0,
                                  .maximum = 4095}),
               field(&P::stride, {.name = "stride",
                                  .help = "NATTEN's stride s or [s1, s2] (1 <= s <= w): a query takes its stride "
                                          "group leader's window",
                                  .default_value = std::array<int, 2>{1, 1},
                                  .minimum = 1,
                                  .maximum = 4095}),
               field(&P::dilation, {.name = "dilation",
                                    .help = "dilation d or [d1, d2]",
                                    .default_value = std::array<int, 2>{1, 1},
                                    .minimum = 1}),
               field(&P::causal, {.name = "causal",
                                  .help = "causal or [causal rows, causal columns]: the window ends at the query",
                                  .default_value = std::array<bool, 2>{false, false}}),
               nested(&P::shared, theorem1_shared()), field(&P::dtype, dtype_param())},
    .retired = {{"engine", "dense"}},
    .tensors = {"input", "conv_weight", "conv_bias", "w_qry", "w_key", "v_pos"},
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = distance_metrics(
        "check 2: neighborhood attention on the zero-padded input against the convolution, every pixel",
        {metric::bound.described("the finite-alpha bound of Theorem 1 over the w1 x w2 window"),
         metric::attention_leak.described("eps(alpha), the softmax mass off the target"),
         metric::roundoff_allowance.described("the round-off part of the bound"), metric::alpha, metric::global_max_abs,
         metric::global_rel_l2, metric::global_side, metric::global_allowance, metric::expressed_max_abs,
         metric::expressed_fraction_predicted, metric::unexpressed_min_abs, metric::taps, metric::unpadded_max_abs,
         metric::interior_max_abs.described("check 3: max_abs inside the measured band"), metric::unpadded_bound,
         metric::band_visible,
         metric::band_sides.described("check 3: measured band [top, bottom, left, right]; null when no pixel agrees"),
         metric::band_sides_expected.described("check 3: the taps' reach per side (taps before and after times d)"),
         metric::band_error.described("check 3: sum over sides of |measured - expected| plus band_exceptions"),
         metric::band_exceptions.described("check 3: pixels inside the box that differ or outside it that agree"),
         metric::band_max_abs.described("check 3: the error in the band"), metric::global_band_sides,
         metric::global_band_max_abs, metric::versus_global_max_abs, metric::versus_truncated_max_abs,
         metric::blocked_max_abs, metric::blocked_partial_max_abs, metric::blocked_allowance}),
    .dumps = conv_dumps("the convolution of the taps the window holds, zero-padded, (C_out, H, W)",
                        "neighborhood attention on the padded input",
                        {{"actual_unpadded", "the window rule on the image as it is"},
                         {"global_unpadded", "global attention on the same"},
                         {"rpb", "(heads, 2 w1 - 1, 2 w2 - 1): the quadratic bias"},
                         {"w_val", "(heads, C_in, C_out): the construction's W_val^h, shared by checks 1 to 3"},
                         {"w_out", "(heads C_out, C_out): W_out, head h's rows h C_out ... (h + 1) C_out - 1"},
                         {"b_out", "(C_out): the convolution's bias"},
                         {"global_crop_expected", "check 1: global self-attention (dense engine) on the top-left "
                                                  "S x S crop, S = metrics.global_side: (C_out, S, S)"},
                         {"global_crop_actual", "check 1: neighborhood attention with K_att = S on the same crop"},
                         {"w_qry", "(heads, C_in, C_in): check 1's W_qry^h"},
                         {"w_key", "(heads, C_in, C_in): check 1's W_key^h"},
                         {"v_pos", "(heads, 3): check 1's rpb_h(delta) = v_pos^h . (|delta|^2, delta1, delta2)"}}),
    .memory_estimate = memory_estimate,
    .expected_tensors = expected_tensors,
}));

}  // namespace
}  // namespace attnconv
