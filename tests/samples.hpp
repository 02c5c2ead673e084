#pragma once
// Sample generators shared by the tests that compare a fast path with its
// textbook reference (src/reference/): random MHSA layers and token matrices,
// and, drawn with RapidCheck inside a property (so that a failure shrinks),
// random convolutions and layers of every shape the fast paths accept.
#include <rapidcheck.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <xtensor/xview.hpp>

#include "local/neighborhood_attention.hpp"
#include "acmix/random_weights.hpp"
#include "local/head_tensor.hpp"
#include "mhsa/mhsa_layer.hpp"
#include "ops/geometry.hpp"
#include "tensor/random.hpp"

namespace attnconv::samples {

struct LayerShape {
  Encoding encoding = Encoding::quadratic;
  std::size_t heads = 4, d_in = 5, d_k = 4, d_h = 3, d_out = 6;
  bool cycle_d_k = false;     // D_k of head h is 1 + h % 3 instead of d_k (heads may differ in D_k)
  double position_scale = 1;  // scales W^_key
  double score_scale = 3;     // scales v: larger = sharper attention (40: many weights exactly 0)
  bool content = false;       // random W_qry, u (else 0: positional only)
  bool cross_term = false;    // keep quadratic_general's delta1*delta2 column of W^_key (else 0: the score splits)
};

// Every parameter uniform in [-1, 1) (then scaled as the shape says), drawn
// from `random` in the order W_qry, W_key, W^_key, u, v, W_val per head, then W_out, b_out.
template <class T> MhsaLayer<T> random_layer(Random& random, const LayerShape& s) {
  const std::size_t d_p = std::size_t(encoding_dim(s.encoding));
  MhsaLayer<T> layer;
  layer.encoding = s.encoding;
  for (std::size_t h = 0; h < s.heads; ++h) {
    const std::size_t d_k = s.cycle_d_k ? 1 + h % 3 : s.d_k;
    AttentionHead<T> head;
    head.w_qry = random.uniform_tensor<T, 2>({s.d_in, d_k});
    head.w_key = random.uniform_tensor<T, 2>({s.d_in, d_k});
    head.w_key_hat = random.uniform_tensor<T, 2>({d_k, d_p}) * T(s.position_scale);
    head.u = random.uniform_tensor<T, 1>({d_k});
    head.v = random.uniform_tensor<T, 1>({d_k}) * T(s.score_scale);
    head.w_val = random.uniform_tensor<T, 2>({s.d_in, s.d_h});
    if (!s.content) {
      head.w_qry.fill(T(0));
      head.u.fill(T(0));
    }
    if (s.encoding == Encoding::quadratic_general && !s.cross_term) xt::view(head.w_key_hat, xt::all(), 2) = T(0);
    layer.heads.push_back(std::move(head));
  }
  layer.w_out = random.uniform_tensor<T, 2>({s.heads * s.d_h, s.d_out});
  layer.b_out = random.uniform_tensor<T, 1>({s.d_out});
  return layer;
}

template <class T> MhsaLayer<T> random_layer(std::uint64_t seed, const LayerShape& s) {
  Random random(seed);
  return random_layer<T>(random, s);
}

// The same layer in another dtype (every parameter rounded once).
template <class T, class S> MhsaLayer<T> cast_layer(const MhsaLayer<S>& layer) {
  MhsaLayer<T> out;
  out.encoding = layer.encoding;
  for (const auto& head : layer.heads)
    out.heads.push_back({xt::cast<T>(head.w_qry), xt::cast<T>(head.w_key), xt::cast<T>(head.w_key_hat),
                         xt::cast<T>(head.u), xt::cast<T>(head.v), xt::cast<T>(head.w_val)});
  out.w_out = xt::cast<T>(layer.w_out);
  out.b_out = xt::cast<T>(layer.b_out);
  return out;
}

// n tokens of D_in channels, from the "input" stream of `seed`.
template <class T> Matrix<T> random_tokens(std::uint64_t seed, std::size_t n, std::size_t d_in) {
  return Random(seed).stream(purpose_id("input")).uniform_tensor<T, 2>({n, d_in});
}

// A 2D convolution: kernel 1..4 per axis, stride and dilation 1..3, padding
// 0..2 per side in every mode (reflect < side, circular <= side, as PyTorch
// requires), groups 1..3 with 1..2 channels per group in and out (depthwise and
// channel multipliers among them), with or without bias, an image at
// least the receptive field, values from a drawn seed.
template <class T> struct ConvSample {
  Image<T> x;
  Kernel<T> weight;
  std::optional<Vector<T>> bias;
  ConvGeometry geometry;
  std::string description;
};

template <class T> ConvSample<T> conv_sample() {
  const int k1 = *rc::gen::inRange(1, 5), k2 = *rc::gen::inRange(1, 5);
  const int d1 = *rc::gen::inRange(1, 4), d2 = *rc::gen::inRange(1, 4);
  const int h = d1 * (k1 - 1) + 1 + *rc::gen::inRange(0, 5), w = d2 * (k2 - 1) + 1 + *rc::gen::inRange(0, 5);
  ConvGeometry g;
  g.groups = *rc::gen::inRange(1, 4);  // groups = c_in: depthwise, c_out = 2 c_in: a channel multiplier
  const int c_in = g.groups * *rc::gen::inRange(1, 3), c_out = g.groups * *rc::gen::inRange(1, 3);
  g.stride = {*rc::gen::inRange(1, 4), *rc::gen::inRange(1, 4)};
  g.dilation = {d1, d2};
  g.padding_mode = *rc::gen::element(PaddingMode::zeros, PaddingMode::reflect, PaddingMode::replicate,
                                     PaddingMode::circular);
  const auto side = [&](int extent) {
    const int limit = g.padding_mode == PaddingMode::reflect ? extent - 1 : extent;
    return *rc::gen::inRange(0, std::min(2, limit) + 1);
  };
  g.padding = {side(h), side(h), side(w), side(w)};
  const bool bias = *rc::gen::arbitrary<bool>();
  const auto seed = std::uint64_t(*rc::gen::inRange(0, 1000));
  std::ostringstream d;
  d << "image " << c_in << "x" << h << "x" << w << ", kernel " << c_out << "x" << c_in / g.groups << "x" << k1 << "x"
    << k2 << ", groups " << g.groups
    << ", padding (" << g.padding.top << ", " << g.padding.bottom << ", " << g.padding.left << ", " << g.padding.right
    << ") " << to_string(g.padding_mode) << ", stride (" << g.stride[0] << ", " << g.stride[1] << "), dilation ("
    << d1 << ", " << d2 << "), bias " << bias << ", seed " << seed;
  Random random(seed);
  ConvSample<T> s{random.uniform_tensor<T, 3>({std::size_t(c_in), std::size_t(h), std::size_t(w)}),
                  random.uniform_tensor<T, 4>(
                      {std::size_t(c_out), std::size_t(c_in / g.groups), std::size_t(k1), std::size_t(k2)}),
                  std::nullopt, g, d.str()};
  if (bias) s.bias = random.uniform_tensor<T, 1>({std::size_t(c_out)});
  return s;
}

// An MHSA layer and its input: an H x W image (1..6 per side), 1..4 heads,
// every dimension 1..4, each encoding, attention from flat to sharp (v scaled
// by 0.3, 3 or 40). `positional_only`: W_qry = 0, u = 0 and no delta1*delta2
// term (the layers the separable engine is exact for); else every term random.
// Positional-only layers have, half of the time, every head attending as head 0
// (its v and W^_key; the heads' values differ): one column attention shared by
// several heads, as the heads of a kernel column in Theorem 1's construction.
struct LayerSample {
  MhsaLayer<double> layer;
  Matrix<double> x;
  std::size_t height, width;
  std::string description;
};

inline LayerSample layer_sample(bool positional_only) {
  LayerShape shape;
  shape.encoding = *rc::gen::element(Encoding::quadratic, Encoding::quadratic_general, Encoding::quadratic_1d);
  shape.heads = std::size_t(*rc::gen::inRange(1, 5));
  shape.d_in = std::size_t(*rc::gen::inRange(1, 5)), shape.d_k = std::size_t(*rc::gen::inRange(1, 5));
  shape.d_h = std::size_t(*rc::gen::inRange(1, 5)), shape.d_out = std::size_t(*rc::gen::inRange(1, 5));
  shape.score_scale = *rc::gen::element(0.3, 3.0, 40.0);
  shape.content = shape.cross_term = !positional_only;
  const auto height = std::size_t(*rc::gen::inRange(1, 7)), width = std::size_t(*rc::gen::inRange(1, 7));
  const auto seed = std::uint64_t(*rc::gen::inRange(0, 1000));
  const bool shared = positional_only && *rc::gen::arbitrary<bool>();
  std::ostringstream d;
  d << "image " << height << "x" << width << ", " << to_string(shape.encoding) << ", heads " << shape.heads
    << ", D_in " << shape.d_in << ", D_k " << shape.d_k << ", D_h " << shape.d_h << ", D_out " << shape.d_out
    << ", v scale " << shape.score_scale << (positional_only ? ", positional only" : ", content terms")
    << (shared ? ", every head attending as head 0" : "") << ", seed " << seed;
  MhsaLayer<double> layer = random_layer<double>(seed, shape);
  if (shared)
    for (auto& head : layer.heads) head.v = layer.heads[0].v, head.w_key_hat = layer.heads[0].w_key_hat;
  return {std::move(layer), random_tokens<double>(seed, height * width, shape.d_in), height, width, d.str()};
}

// Neighborhood attention on random maps: per axis a window 1..5 (odd or even),
// a stride 1..w, a dilation 1..3, causal or not, an axis of w d + 0..4 pixels,
// 1..2 heads, with or without an rpb (NATTEN's parameters, src/local/neighborhood_attention.hpp).
struct NattenSample {
  HeadMaps<double> q, k, v;
  xt::xtensor<double, 3> rpb;  // empty: no bias
  Neighborhood axes;
  std::string description;
};
inline NattenSample natten_sample() {
  Neighborhood axes;
  std::array<int, 2> size{};
  std::ostringstream d;
  for (std::size_t a = 0; a < 2; ++a) {
    NeighborhoodAxis& axis = axes[a];
    axis.window = *rc::gen::inRange(1, 6);
    axis.stride = *rc::gen::inRange(1, axis.window + 1);
    axis.dilation = *rc::gen::inRange(1, 4);
    axis.causal = *rc::gen::arbitrary<bool>();
    size[a] = axis.window * axis.dilation + *rc::gen::inRange(0, 5);
    d << (a ? ", columns " : "rows ") << size[a] << ": window " << axis.window << " stride " << axis.stride
      << " dilation " << axis.dilation << (axis.causal ? " causal" : "");
  }
  const std::size_t heads = std::size_t(*rc::gen::inRange(1, 3)), h = std::size_t(size[0]), w = std::size_t(size[1]);
  const bool biased = *rc::gen::arbitrary<bool>();
  const auto seed = std::uint64_t(*rc::gen::inRange(0, 1000));
  d << ", heads " << heads << (biased ? ", rpb" : ", no rpb") << ", seed " << seed;
  Random random(seed);
  NattenSample s{random.uniform_tensor<double, 4>({heads, h, w, 2}), random.uniform_tensor<double, 4>({heads, h, w, 2}),
                       random.uniform_tensor<double, 4>({heads, h, w, 3}), xt::xtensor<double, 3>({0, 0, 0}), axes, d.str()};
  if (biased)
    s.rpb = random.uniform_tensor<double, 3>(
        {heads, std::size_t(2 * axes[0].window - 1), std::size_t(2 * axes[1].window - 1)});
  return s;
}

// ---- Samples of the local attention variants and of ACmix ----
// Each draws some inputs its fast path refuses (a map too small for the window,
// a side that is not a multiple of it, a shift outside [0, M)), so that a table
// row checks the refusal too; most draws are accepted.

// Per-head maps q, k, v (heads, H, W, D) of 1..3 heads, D_k, D_v 1..3, values in
// [-1, 1), q scaled by 0.3, 3 or 20 (flat to sharp attention).
struct HeadMapsSample {
  HeadMaps<double> q, k, v;
};

inline HeadMapsSample head_maps(Random& random, std::size_t heads, std::size_t height, std::size_t width) {
  const auto d_k = std::size_t(*rc::gen::inRange(1, 4)), d_v = std::size_t(*rc::gen::inRange(1, 4));
  const double q_scale = *rc::gen::element(0.3, 3.0, 20.0);
  HeadMaps<double> q = random.uniform_tensor<double, 4>({heads, height, width, d_k}) * q_scale;
  return {std::move(q), random.uniform_tensor<double, 4>({heads, height, width, d_k}),
          random.uniform_tensor<double, 4>({heads, height, width, d_v})};
}

// Neighborhood attention: window K in {1, 3, 5}, dilation 1..3 (1..2 for K = 5),
// each side K d - 2 .. K d + 2 (at least 1), rpb (heads, 2K - 1, 2K - 1) in [-2, 2).
struct NeighborhoodSample {
  HeadMapsSample maps;
  xt::xtensor<double, 3> rpb;
  int kernel, dilation;
  std::string description;
};

inline NeighborhoodSample neighborhood_sample() {
  const int kernel = *rc::gen::element(1, 3, 5), dilation = *rc::gen::inRange(1, kernel == 5 ? 3 : 4);
  const auto side = [&] { return std::max(1, kernel * dilation + *rc::gen::inRange(-2, 3)); };
  const int height = side(), width = side();
  const auto heads = std::size_t(*rc::gen::inRange(1, 4));
  const auto seed = std::uint64_t(*rc::gen::inRange(0, 1000));
  Random random(seed);
  HeadMapsSample maps = head_maps(random, heads, std::size_t(height), std::size_t(width));
  const auto table = std::size_t(2 * kernel - 1);
  xt::xtensor<double, 3> rpb = random.uniform_tensor<double, 3>({heads, table, table}) * 2.0;
  std::ostringstream d;
  d << "map " << height << "x" << width << ", heads " << heads << ", D_k " << maps.q.shape(3) << ", D_v "
    << maps.v.shape(3) << ", window " << kernel << ", dilation " << dilation << ", seed " << seed;
  return {std::move(maps), std::move(rpb), kernel, dilation, d.str()};
}

// Swin windows: M 1..4, shift 0..M (M: refused), each side 1..3 windows, a
// quarter of the time 1..M - 1 pixels more (refused), table ((2M - 1)^2, heads) in [-2, 2).
struct SwinSample {
  HeadMapsSample maps;
  Matrix<double> table;
  int window, shift;
  std::string description;
};

inline SwinSample swin_sample() {
  const int window = *rc::gen::inRange(1, 5), shift = *rc::gen::inRange(0, window + 1);
  const auto side = [&] {
    const int extra = window > 1 && *rc::gen::inRange(0, 4) == 0 ? *rc::gen::inRange(1, window) : 0;
    return window * *rc::gen::inRange(1, 4) + extra;
  };
  const int height = side(), width = side();
  const auto heads = std::size_t(*rc::gen::inRange(1, 4));
  const auto seed = std::uint64_t(*rc::gen::inRange(0, 1000));
  Random random(seed);
  HeadMapsSample maps = head_maps(random, heads, std::size_t(height), std::size_t(width));
  Matrix<double> table = random.uniform_tensor<double, 2>({std::size_t((2 * window - 1) * (2 * window - 1)), heads}) * 2.0;
  std::ostringstream d;
  d << "map " << height << "x" << width << ", heads " << heads << ", D_k " << maps.q.shape(3) << ", D_v "
    << maps.v.shape(3) << ", window " << window << ", shift " << shift << ", seed " << seed;
  return {std::move(maps), std::move(table), window, shift, d.str()};
}

// An ACmix module and its input: C_in 1..3, 1..3 heads of head_dim 1..2,
// k_att 1..5, k_conv 1, 3 or 5, stride 1..2, an image 1..6 per side (k_att / 2
// >= a side: refused by the attention path), dep_conv shift-initialised or
// random, Stage I biases or none, weights from random_acmix_weights.
struct AcmixSample {
  AcmixConfig config;
  AcmixWeights<double> weights;
  Image<double> x;
  std::string description;
};

inline AcmixSample acmix_sample() {
  AcmixConfig config;
  config.in_channels = *rc::gen::inRange(1, 4);
  config.heads = *rc::gen::inRange(1, 4);
  config.out_channels = config.heads * *rc::gen::inRange(1, 3);
  config.kernel_att = *rc::gen::inRange(1, 6);
  config.kernel_conv = *rc::gen::element(1, 3, 5);
  config.stride = *rc::gen::inRange(1, 3);
  const auto height = std::size_t(*rc::gen::inRange(1, 7)), width = std::size_t(*rc::gen::inRange(1, 7));
  AcmixInit init;
  init.dep_init = *rc::gen::element(std::string("shift"), std::string("random"));
  init.projection_bias = *rc::gen::arbitrary<bool>();
  const auto seed = std::uint64_t(*rc::gen::inRange(0, 1000));
  const Random random(seed);
  std::ostringstream d;
  d << "image " << config.in_channels << "x" << height << "x" << width << ", C_out " << config.out_channels
    << ", heads " << config.heads << ", k_att " << config.kernel_att << ", k_conv " << config.kernel_conv
    << ", stride " << config.stride << ", dep_conv " << init.dep_init << ", Stage I bias " << init.projection_bias
    << ", seed " << seed;
  return {config, random_acmix_weights<double>(config, init, random),
          random.stream(purpose_id("input")).uniform_tensor<double, 3>({std::size_t(config.in_channels), height, width}),
          d.str()};
}

}  // namespace attnconv::samples
