// Grouped and depthwise convolutions (PyTorch's groups, docs/design.md,
// "Groups"): a grouped weight is a dense one with block-diagonal tap slices;
// Theorem 1's construction on PyTorch's own grouped layers equals their output;
// the rank a slice has, hence the head_dim one head per tap needs; and heads
// per (tap, group) with smaller value matrices, of the same total width.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xnpy.hpp>
#include <xtensor/xsort.hpp>
#include <xtensor/xview.hpp>

#include "construction/theorem1.hpp"
#include "construction/theorem1_check.hpp"
#include "metrics/compare.hpp"
#include "mhsa/dense_engine.hpp"
#include "ops/conv1d_blocked.hpp"
#include "ops/conv2d_blocked.hpp"
#include "ops/dense_kernel.hpp"
#include "tensor/random.hpp"
#include "torch_fixtures.hpp"

namespace {

using namespace attnconv;

Kernel<double> random_kernel(std::uint64_t seed, std::size_t c_out, std::size_t group_in, std::size_t k) {
  return Random(seed).stream(purpose_id("conv_weight")).uniform_tensor<double, 4>({c_out, group_in, k, k});
}

Image<double> random_image(std::uint64_t seed, std::size_t c_in, std::size_t h, std::size_t w) {
  return Random(seed).stream(purpose_id("input")).uniform_tensor<double, 3>({c_in, h, w});
}

// The singular values of the tap (p, q) of a dense kernel, largest first.
xt::xtensor<double, 1> slice_singular_values(const Kernel<double>& dense, std::size_t p, std::size_t q) {
  const xt::xtensor<double, 2> slice = xt::view(dense, xt::all(), xt::all(), p, q);
  return std::get<1>(xt::linalg::svd(slice, false, false));
}

MhsaEngine<double> dense_engine() {
  return [](const MhsaLayer<double>& layer, const Matrix<double>& tokens, std::size_t h, std::size_t w) {
    return mhsa_dense(layer, tokens, h, w);
  };
}

const std::optional<Vector<double>> no_bias;

double scale(const Image<double>& y) { return double(xt::amax(xt::abs(y))()); }

}  // namespace

TEST_CASE("dense_kernel: a grouped weight is a dense one with block-diagonal tap slices", "[groups]") {
  // groups 2: C_in 4, C_out 6, blocks of 3 x 2.
  const Kernel<double> w = random_kernel(1, 6, 2, 3);
  const Kernel<double> dense = dense_kernel(w, 2);
  REQUIRE(dense.shape() == std::array<std::size_t, 4>{6, 4, 3, 3});
  for (std::size_t o = 0; o < 6; ++o)
    for (std::size_t c = 0; c < 4; ++c) {
      const bool in_group = c / 2 == o / 3;
      const bool as_given = in_group ? xt::view(dense, o, c) == xt::view(w, o, c % 2) : xt::all(xt::equal(xt::view(dense, o, c), 0.0));
      CHECK(as_given);
    }
  // The same convolution: the dense sum adds exact zeros only, so bit for bit.
  const Image<double> x = random_image(1, 4, 7, 6);
  ConvGeometry g;
  g.padding = {1, 1, 1, 1};
  g.groups = 2;
  const Image<double> grouped = conv2d_blocked(x, w, no_bias, g);
  g.groups = 1;
  const bool same = grouped == conv2d_blocked(x, dense, no_bias, g);
  CHECK(same);
  CHECK_THROWS_AS(dense_kernel(w, 4), std::invalid_argument);  // 6 output channels do not split into 4
}

TEST_CASE("a depthwise slice is diagonal: full rank C, Eckart-Young is its smallest entries", "[groups]") {
  const std::size_t channels = 5;
  const Kernel<double> w = random_kernel(2, channels, 1, 3);
  const Kernel<double> dense = dense_kernel(w, int(channels));
  double tail2 = 0;  // head_dim 3: the two smallest |W[c, 0, p, q]| of every tap are lost
  for (std::size_t p = 0; p < 3; ++p)
    for (std::size_t q = 0; q < 3; ++q) {
      const auto sigma = slice_singular_values(dense, p, q);
      const xt::xtensor<double, 1> magnitudes = xt::abs(xt::view(w, xt::all(), 0, p, q));
      const xt::xtensor<double, 1> entries = xt::sort(magnitudes);
      CHECK(sigma(channels - 1) > 1e-3);  // rank C: grouping does not lower the worst case
      for (std::size_t k = 0; k < channels; ++k) CHECK(sigma(k) == Approx(entries(channels - 1 - k)).epsilon(1e-12));
      tail2 += entries(0) * entries(0) + entries(1) * entries(1);
    }
  CHECK(eckart_young_tail(dense, 3) == Approx(std::sqrt(tail2)).epsilon(1e-12));
  CHECK(eckart_young_tail(dense, int(channels)) == 0.0);

  // A channel multiplier m = 2 (C_out = 2 C_in, groups = C_in): a slice is
  // (2C x C), each column holding one block of 2: rank C = min(C_in, C_out).
  const Kernel<double> multiplied = dense_kernel(random_kernel(3, 2 * channels, 1, 3), int(channels));
  CHECK(slice_singular_values(multiplied, 1, 1)(channels - 1) > 1e-3);
  CHECK(eckart_young_tail(multiplied, int(channels)) < 1e-14);
  CHECK(eckart_young_tail(multiplied, int(channels) - 1) > 1e-3);
}

TEST_CASE("Theorem 1 on PyTorch's grouped and depthwise Conv2d equals PyTorch's output", "[groups]") {
  int checked = 0;
  for (const auto& fixture : testing::torch_fixtures("conv2d")) {
    const nlohmann::json& f = fixture.entry;
    const int groups = f.at("groups");
    if (groups == 1) continue;
    INFO("fixture " << f.dump());
    const Image<double> x = fixture.load("input");
    const Kernel<double> w = fixture.load("weight");
    const Image<double> torch_output = fixture.load("output");
    std::optional<Vector<double>> bias;
    if (f["bias"].get<bool>()) bias = Vector<double>(fixture.load("bias"));
    ConvGeometry g;
    g.padding = {f["padding"][0], f["padding"][1], f["padding"][2], f["padding"][3]};
    g.padding_mode = padding_mode_from_string(f["padding_mode"]);
    g.stride = {f["stride"][0], f["stride"][1]};
    g.dilation = {f["dilation"][0], f["dilation"][1]};
    g.groups = groups;
    Theorem1Options options;
    options.heads = f["kernel"][0].get<int>() * f["kernel"][1].get<int>();
    options.head_dim = std::min(f["in_channels"].get<int>(), f["out_channels"].get<int>());
    options.alpha = 60;
    options.dilation = g.dilation;
    const Theorem1Check<double> check = check_theorem1(x, w, bias, g, options, dense_engine());
    const double roundoff = 1e-12 * scale(torch_output);
    CHECK(compare(check.expected, torch_output).max_abs <= roundoff);
    CHECK(check.bound(options.alpha) < 1e-10);
    CHECK(compare(check.actual, torch_output).max_abs <= check.bound(options.alpha) + roundoff);
    ++checked;
  }
  CHECK(checked == 4);  // groups 2, depthwise, depthwise with multiplier 2, depthwise dilated
}

TEST_CASE("Theorem 1's 1D remark on PyTorch's grouped and depthwise Conv1d equals PyTorch's output", "[groups]") {
  int checked = 0;
  for (const auto& fixture : testing::torch_fixtures("conv1d")) {
    const nlohmann::json& f = fixture.entry;
    const int groups = f.at("groups");
    if (groups == 1) continue;
    INFO("fixture " << f.dump());
    const Sequence<double> x = fixture.load("input");
    const Kernel1d<double> w = fixture.load("weight");
    const Sequence<double> torch_output = fixture.load("output");
    const std::optional<Vector<double>> bias(fixture.load("bias"));
    Conv1dGeometry g;
    g.pad_left = f["padding"][0], g.pad_right = f["padding"][1];
    g.padding_mode = padding_mode_from_string(f["padding_mode"]);
    g.stride = f["stride"], g.dilation = f["dilation"], g.groups = groups;
    Theorem1Options options;
    options.heads = f["kernel"];
    options.head_dim = std::min(f["in_channels"].get<int>(), f["out_channels"].get<int>());
    options.alpha = 60;
    options.dilation = {1, g.dilation};
    options.encoding = Encoding::quadratic_1d;
    const Theorem1Check<double> check = check_theorem1(as_image(x), as_kernel(w), bias, as_2d(g), options, dense_engine());
    const double roundoff = 1e-12 * double(xt::amax(xt::abs(torch_output))());
    CHECK(compare(as_sequence(check.expected), torch_output).max_abs <= roundoff);
    CHECK(check.bound(options.alpha) < 1e-10);
    CHECK(compare(as_sequence(check.actual), torch_output).max_abs <= check.bound(options.alpha) + roundoff);
    ++checked;
  }
  CHECK(checked == 3);  // groups 2, depthwise, depthwise with multiplier 2
}

TEST_CASE("heads per (tap, group): value matrices of the block's rank, the same total width N_h D_h", "[groups]") {
  // Depthwise with multiplier 2: C_in 4, C_out 8, groups 4, 3 x 3. One head per
  // tap needs D_h = min(4, 8) = 4 (9 heads, N_h D_h = 36). A head per tap and
  // group expresses one (2 x 1) block, of rank 1: D_h = 1, but 36 heads.
  const std::size_t c_in = 4, c_out = 8, groups = 4, k = 3;
  const Kernel<double> w = random_kernel(4, c_out, 1, k);
  const Kernel<double> dense = dense_kernel(w, int(groups));
  const Image<double> x = random_image(4, c_in, 7, 8);
  const Vector<double> bias = Random(4).stream(purpose_id("conv_bias")).uniform_tensor<double, 1>({c_out});
  ConvGeometry g;
  g.padding = {1, 1, 1, 1};
  g.groups = int(groups);
  const Image<double> expected = conv2d_blocked(x, w, std::optional<Vector<double>>(bias), g);

  Theorem1Options per_group;
  per_group.heads = int(k * k), per_group.head_dim = 1, per_group.alpha = 60;
  MhsaLayer<double> layer;
  for (std::size_t gi = 0; gi < groups; ++gi) {
    Kernel<double> block = xt::zeros_like(dense);  // group gi's rows alone
    const std::size_t rows = c_out / groups;
    xt::view(block, xt::range(gi * rows, (gi + 1) * rows)) = xt::view(dense, xt::range(gi * rows, (gi + 1) * rows));
    MhsaLayer<double> part = theorem1_layer(block, no_bias, per_group);
    for (auto& head : part.heads) layer.heads.push_back(std::move(head));
    layer.w_out = gi == 0 ? part.w_out : Matrix<double>(xt::concatenate(xt::xtuple(layer.w_out, part.w_out), 0));
  }
  layer.b_out = bias;
  CHECK(layer.heads.size() * layer.head_dim() == k * k * std::min(c_in, c_out));  // 36, as one head per tap

  const Image<double> xpad = pad(x, g.padding, g.padding_mode);
  const Image<double> out = mhsa_image(layer, xpad, dense_engine());
  const Image<double> actual = align_to_convolution(out, {int(k), int(k)}, g, {int(expected.shape(1)), int(expected.shape(2))});
  CHECK(compare(actual, expected).max_abs <= 1e-12 * scale(expected));
  // One head per tap with D_h = 1 cannot: a slice has rank 4.
  CHECK(eckart_young_tail(dense, 1) > 0.1);
}
