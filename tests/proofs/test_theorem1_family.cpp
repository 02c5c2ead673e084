// Theorem 1 of Cordonnier, Loukas & Jaggi (ICLR 2020) over a generated family
// of convolutions: the construction (theorem1_layer), run by the dense MHSA on
// the padded image and read back by align_to_convolution (the paper's remarks
// on padding, stride, dilation; docs/design.md), equals conv2d_blocked to
// round-off at alpha = 60 in float64. And the rank-limited construction
// (D_h < D_out) misses the kernel by exactly the Eckart-Young tail.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "construction/theorem1.hpp"
#include "cases/case_loader.hpp"
#include "metrics/compare.hpp"
#include "mhsa/dense_engine.hpp"
#include "ops/conv2d_blocked.hpp"
#include "tensor/random.hpp"

namespace {

using namespace attnconv;

struct Config {
  std::array<int, 2> image, kernel, stride, dilation;
  Padding padding;
  PaddingMode mode;
  int in_channels, out_channels, heads, head_dim;
  bool bias;
  double alpha = 60;
};

std::string describe(const Config& c) {
  return "image " + std::to_string(c.image[0]) + "x" + std::to_string(c.image[1]) + ", kernel " +
         std::to_string(c.kernel[0]) + "x" + std::to_string(c.kernel[1]) + ", padding [" +
         std::to_string(c.padding.top) + "," + std::to_string(c.padding.bottom) + "," + std::to_string(c.padding.left) +
         "," + std::to_string(c.padding.right) + "] " + to_string(c.mode) + ", stride " + std::to_string(c.stride[0]) +
         "x" + std::to_string(c.stride[1]) + ", dilation " + std::to_string(c.dilation[0]) + "x" +
         std::to_string(c.dilation[1]) + ", channels " + std::to_string(c.in_channels) + "->" +
         std::to_string(c.out_channels) + ", heads " + std::to_string(c.heads) + ", head_dim " +
         std::to_string(c.head_dim) + (c.bias ? ", bias" : ", no bias") + ", alpha " + std::to_string(c.alpha);
}

struct Run {
  Image<double> x;
  Kernel<double> w_conv;
  std::optional<Vector<double>> bias;
  ConvGeometry geometry;
  Image<double> expected, actual;  // the convolution, and the aligned MHSA output
  MhsaLayer<double> layer;
};

// The pipeline of the proof: theorem1_layer + pad + mhsa_dense + align_to_convolution.
Run run(const Config& c, std::uint64_t seed) {
  const Random random(seed);
  Run r;
  r.x = random.stream(purpose_id("input")).uniform_tensor<double, 3>(
      {std::size_t(c.in_channels), std::size_t(c.image[0]), std::size_t(c.image[1])});
  const Image<double>& x = r.x;
  r.w_conv = random.stream(purpose_id("conv_weight"))
                 .uniform_tensor<double, 4>({std::size_t(c.out_channels), std::size_t(c.in_channels),
                                             std::size_t(c.kernel[0]), std::size_t(c.kernel[1])});
  if (c.bias) r.bias = random.stream(purpose_id("conv_bias")).uniform_tensor<double, 1>({std::size_t(c.out_channels)});
  const std::optional<Vector<double>>& b = r.bias;
  ConvGeometry& g = r.geometry;
  g.padding = c.padding, g.padding_mode = c.mode, g.stride = c.stride, g.dilation = c.dilation;
  r.expected = conv2d_blocked(x, r.w_conv, b, g);

  Theorem1Options options;
  options.heads = c.heads, options.head_dim = c.head_dim, options.alpha = c.alpha, options.dilation = c.dilation;
  r.layer = theorem1_layer(r.w_conv, b, options);
  const Image<double> xpad = pad(x, c.padding, c.mode);
  const std::size_t hp = xpad.shape(1), wp = xpad.shape(2);
  const Image<double> out = tokens_to_image(mhsa_dense(r.layer, image_to_tokens(xpad), hp, wp), hp, wp);
  r.actual = align_to_convolution(out, c.kernel, g, {int(r.expected.shape(1)), int(r.expected.shape(2))});
  return r;
}

// W_val^(h) W_out^(h): what head h applies to its key (D_in x D_out).
Matrix<double> head_product(const MhsaLayer<double>& layer, std::size_t h) {
  const std::size_t d_h = layer.head_dim();
  Matrix<double> m = xt::zeros<double>({layer.in_dim(), layer.out_dim()});
  for (std::size_t i = 0; i < m.shape(0); ++i)
    for (std::size_t o = 0; o < m.shape(1); ++o)
      for (std::size_t k = 0; k < d_h; ++k) m(i, o) += layer.heads[h].w_val(i, k) * layer.w_out(h * d_h + k, o);
  return m;
}

enum class PaddingKind { same, valid, explicit_sides };

}  // namespace

TEST_CASE("Theorem 1 at alpha = 60, float64: MHSA equals the convolution to round-off", "[theorem1_family]") {
  const auto kernel = GENERATE(std::array<int, 2>{1, 1}, std::array<int, 2>{1, 3}, std::array<int, 2>{2, 2},
                               std::array<int, 2>{3, 1}, std::array<int, 2>{3, 3}, std::array<int, 2>{2, 5},
                               std::array<int, 2>{4, 3}, std::array<int, 2>{5, 5});
  const PaddingKind kind = GENERATE(PaddingKind::same, PaddingKind::valid, PaddingKind::explicit_sides);
  const PaddingMode mode = GENERATE(PaddingMode::zeros, PaddingMode::reflect, PaddingMode::replicate, PaddingMode::circular);
  const int stride = GENERATE(1, 2);
  const int dilation = GENERATE(1, 2);

  // Everything else drawn from a seed unique to this configuration.
  const std::uint64_t seed = std::uint64_t(kernel[0] * 1000000 + kernel[1] * 100000 + int(kind) * 10000 +
                                            int(mode) * 1000 + stride * 100 + dilation * 10);
  Random draw = Random(seed).stream(purpose_id("family"));
  const auto pick = [&](int lo, int hi) { return lo + int(draw.next_u64() % std::uint64_t(hi - lo + 1)); };

  Config c;
  c.kernel = kernel, c.mode = mode;
  // Mixed strides and dilations too: (s, 1) / (1, s) every other configuration.
  c.stride = pick(0, 2) == 0 ? std::array<int, 2>{stride, 1} : std::array<int, 2>{stride, stride};
  c.dilation = pick(0, 2) == 0 ? std::array<int, 2>{1, dilation} : std::array<int, 2>{dilation, dilation};
  switch (kind) {
    case PaddingKind::same: c.padding = same_padding(c.kernel, c.dilation); break;
    case PaddingKind::valid: c.padding = {}; break;
    case PaddingKind::explicit_sides: c.padding = {pick(0, 2), pick(0, 2), pick(0, 2), pick(0, 2)}; break;
  }
  // The smallest image that the geometry allows (receptive field fits; reflect
  // needs pad < side), plus 0..3.
  const auto side = [&](int k, int d, int before, int after) {
    return std::max({d * (k - 1) + 1 - before - after, std::max(before, after) + 1, 1}) + pick(0, 3);
  };
  c.image = {side(c.kernel[0], c.dilation[0], c.padding.top, c.padding.bottom),
             side(c.kernel[1], c.dilation[1], c.padding.left, c.padding.right)};
  c.in_channels = pick(1, 5);
  c.out_channels = pick(1, 5);
  c.heads = c.kernel[0] * c.kernel[1] + pick(0, 2);  // K1*K2 and more (the extra heads are silent)
  c.head_dim = c.out_channels + pick(0, 2);          // D_h >= D_out
  c.bias = pick(0, 3) != 0;

  INFO(describe(c));
  const Run r = run(c, seed);
  const Difference d = compare(r.actual, r.expected);
  INFO("rel_l2 " << d.rel_l2 << ", max_abs " << d.max_abs);
  CHECK(d.rel_l2 <= 1e-12);
}

TEST_CASE("Theorem 1 at alpha = 1e4: the softmax stays exact", "[theorem1_family]") {
  Config c{{7, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, PaddingMode::zeros, 3, 4, 9, 4, true, 1e4};
  INFO(describe(c));
  const Run r = run(c, 3);
  for (const double value : r.actual) REQUIRE(std::isfinite(value));
  const Difference d = compare(r.actual, r.expected);
  INFO("rel_l2 " << d.rel_l2);
  CHECK(d.rel_l2 <= 1e-12);
}

TEST_CASE("Theorem 1, head_dim < out_channels: the best rank-D_h product, Eckart-Young", "[theorem1_family]") {
  // {kernel, in_channels, out_channels, head_dim}
  const auto shape = GENERATE(std::array<int, 5>{3, 3, 4, 5, 2}, std::array<int, 5>{3, 3, 5, 6, 1},
                              std::array<int, 5>{2, 3, 3, 3, 2}, std::array<int, 5>{1, 1, 6, 4, 3},
                              std::array<int, 5>{3, 2, 4, 4, 3}, std::array<int, 5>{5, 5, 3, 4, 1});
  Config c{{8, 7}, {shape[0], shape[1]}, {1, 1}, {1, 1}, same_padding({shape[0], shape[1]}, {1, 1}), PaddingMode::zeros,
           shape[2], shape[3], shape[0] * shape[1], shape[4], true};
  INFO(describe(c));
  const Run r = run(c, std::uint64_t(shape[0] * 10000 + shape[1] * 1000 + shape[2] * 100 + shape[3] * 10 + shape[4]));

  // || W_val^(h) W_out^(h) - W_conv[:, :, p, q]^T ||_F over every kernel position
  // (head h = p*K2 + q) against the Eckart-Young tail of the slices.
  double distance2 = 0;
  Kernel<double> w_rank = xt::zeros_like(r.w_conv);  // the kernel the MHSA actually applies
  for (int p = 0; p < c.kernel[0]; ++p)
    for (int q = 0; q < c.kernel[1]; ++q) {
      const Matrix<double> m = head_product(r.layer, std::size_t(p * c.kernel[1] + q));
      for (int i = 0; i < c.in_channels; ++i)
        for (int o = 0; o < c.out_channels; ++o) {
          const double difference = m(i, o) - r.w_conv(o, i, p, q);
          distance2 += difference * difference;
          w_rank(o, i, p, q) = m(i, o);
        }
    }
  const double tail = eckart_young_tail(r.w_conv, c.head_dim);
  INFO("Frobenius distance " << std::sqrt(distance2) << ", Eckart-Young tail " << tail);
  CHECK(tail > 0.01);  // random slices of rank min(D_in, D_out) > D_h: the claim cannot hold exactly
  CHECK(std::abs(std::sqrt(distance2) - tail) <= 1e-10);

  // And the MHSA is exactly the convolution with that rank-limited kernel.
  const Difference d = compare(r.actual, conv2d_blocked(r.x, w_rank, r.bias, r.geometry));
  INFO("rel_l2 against the rank-limited convolution " << d.rel_l2);
  CHECK(d.rel_l2 <= 1e-12);
}

TEST_CASE("Theorem 1, D_in < D_h < D_out: the slices have rank <= D_h, still exact", "[theorem1_family]") {
  Config c{{6, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, PaddingMode::reflect, 2, 5, 9, 3, true};
  INFO(describe(c));
  const Run r = run(c, 17);
  CHECK(eckart_young_tail(r.w_conv, c.head_dim) <= 1e-14);
  const Difference d = compare(r.actual, r.expected);
  INFO("rel_l2 " << d.rel_l2);
  CHECK(d.rel_l2 <= 1e-12);
}

TEST_CASE("the proof's finite-alpha bound holds at every alpha, and the error decays", "[theorem1_family]") {
  // docs/design.md, "Finite alpha": ||MHSA - conv||_inf <= sum_h eps(alpha) 2 max_k |X_k W_val W_out| + round-off.
  const std::string dtype = GENERATE("float64", "float32");
  const json object = {{"name", "bound"},
                       {"proof", "cordonnier2020.theorem1"},
                       {"params",
                        {{"image", {7, 8}}, {"kernel", {3, 2}}, {"in_channels", 3}, {"out_channels", 2}, {"heads", 7},
                         {"head_dim", 3}, {"padding", {1, 0, 2, 1}}, {"padding_mode", "replicate"}, {"dtype", dtype},
                         {"seed", 9}}},
                       {"sweep", {{"alpha", {0.25, 1, 2, 4, 8, 16, 32, 60, 1000}}}}};
  double previous = INFINITY;
  for (const Case& c : expand_case(object, "test_theorem1_family", 0)) {
    const Outcome outcome = find_proof(c.proof)->verify(c);
    const double max_abs = outcome.metrics["max_abs"], bound = outcome.metrics["bound"];
    INFO(c.name << ": max_abs " << max_abs << ", bound " << bound);
    CHECK(max_abs <= bound);
    CHECK(max_abs <= previous * (1 + 1e-12) + 1e-5 * (dtype == "float32"));  // no growth with alpha (to round-off)
    previous = max_abs;
  }
  CHECK(previous <= (dtype == "float64" ? 1e-13 : 1e-5));
}
