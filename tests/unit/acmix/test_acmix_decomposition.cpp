// The convolution decomposition (Pan et al., CVPR 2022, Eq. 2-4) and the shift
// as a one-hot depthwise convolution, over generated configurations.
#include <catch2/catch.hpp>

#include "acmix/conv_decomposition.hpp"
#include "acmix/shift.hpp"
#include <algorithm>
#include <xtensor/xmath.hpp>
#include "metrics/compare.hpp"
#include "tensor/random.hpp"

using namespace attnconv;

namespace {
struct Config {
  std::array<int, 2> image, kernel;
  Padding padding;
  PaddingMode mode;
  std::array<int, 2> stride, dilation;
  bool bias;
};
}  // namespace

TEST_CASE("k1*k2 1x1 convolutions + shifts + sum equal the convolution", "[acmix_decomposition]") {
  const Config cfg = GENERATE(
      Config{{6, 7}, {1, 1}, {0, 0, 0, 0}, PaddingMode::zeros, {1, 1}, {1, 1}, true},
      Config{{7, 7}, {3, 3}, {1, 1, 1, 1}, PaddingMode::zeros, {1, 1}, {1, 1}, true},
      Config{{8, 9}, {2, 3}, {0, 1, 1, 1}, PaddingMode::zeros, {1, 1}, {1, 1}, false},
      Config{{9, 8}, {5, 5}, {2, 2, 2, 2}, PaddingMode::zeros, {2, 2}, {1, 1}, true},
      Config{{9, 11}, {3, 3}, {2, 0, 1, 3}, PaddingMode::zeros, {2, 3}, {2, 1}, true},
      Config{{10, 10}, {4, 2}, {0, 0, 0, 0}, PaddingMode::zeros, {3, 1}, {1, 2}, true},
      Config{{7, 9}, {3, 3}, {1, 1, 1, 1}, PaddingMode::reflect, {1, 1}, {1, 1}, true},
      Config{{7, 9}, {3, 5}, {2, 1, 2, 2}, PaddingMode::replicate, {2, 1}, {1, 1}, true},
      Config{{8, 8}, {3, 3}, {2, 2, 2, 2}, PaddingMode::circular, {1, 2}, {2, 2}, false},
      Config{{11, 9}, {7, 7}, {3, 3, 3, 3}, PaddingMode::zeros, {1, 1}, {1, 1}, true},
      Config{{5, 5}, {5, 5}, {0, 0, 0, 0}, PaddingMode::zeros, {1, 1}, {1, 1}, true});
  const std::size_t c_in = 3, c_out = 4;
  const Random random(11);
  const Image<double> x = random.stream(1).uniform_tensor<double, 3>({c_in, std::size_t(cfg.image[0]), std::size_t(cfg.image[1])});
  const Kernel<double> w =
      random.stream(2).uniform_tensor<double, 4>({c_out, c_in, std::size_t(cfg.kernel[0]), std::size_t(cfg.kernel[1])});
  const std::optional<Vector<double>> b =
      cfg.bias ? std::optional<Vector<double>>(random.stream(3).uniform_tensor<double, 1>({c_out})) : std::nullopt;
  ConvGeometry g;
  g.padding = cfg.padding, g.padding_mode = cfg.mode, g.stride = cfg.stride, g.dilation = cfg.dilation;

  const Image<double> expected = conv2d_blocked(x, w, b, g);
  OpCounter tensor_count, depthwise_count;
  const Image<double> by_shift = conv2d_decomposed(x, w, b, g, ShiftMethod::tensor_shift, tensor_count);
  const Image<double> by_depthwise = conv2d_decomposed(x, w, b, g, ShiftMethod::depthwise, depthwise_count);
  REQUIRE(by_shift.shape() == expected.shape());
  CHECK(compare(by_shift, expected).rel_l2 < 1e-14);
  CHECK(compare(by_shift, expected).max_abs < 1e-13);
  // The one-hot depthwise shift moves the same numbers: both decompositions are bit-identical.
  CHECK(compare(by_depthwise, by_shift).max_abs == 0.0);
  // Fused (Stage I only at the kept pixels, added in place): the same sums, counted as tensor_shift counts them.
  OpCounter fused_count;
  const Image<double> fused = conv2d_decomposed(x, w, b, g, ShiftMethod::fused, fused_count);
  REQUIRE(fused.shape() == expected.shape());
  CHECK(compare(fused, by_shift).max_abs <= 1e-14 * std::max(1.0, double(xt::amax(xt::abs(by_shift))())));
  CHECK(fused_count.total("stage1") == tensor_count.total("stage1"));
  CHECK(fused_count.total("stage2") == tensor_count.total("stage2"));

  // Stage I ran k1*k2 products of C_out x C_in by C_in x (H*W) on the (padded, for non-zero modes) input.
  const Image<double> source = cfg.mode == PaddingMode::zeros ? x : pad(x, cfg.padding, cfg.mode);
  const std::int64_t k2 = cfg.kernel[0] * cfg.kernel[1];
  CHECK(tensor_count.total("stage1") == k2 * std::int64_t(c_out * c_in * source.shape(1) * source.shape(2)));
  CHECK(tensor_count.total("stage2") == k2 * std::int64_t(expected.size()));
  CHECK(depthwise_count.total("stage2.depthwise_shift") == k2 * k2 * std::int64_t(expected.size()));
}

TEST_CASE("a one-hot depthwise convolution is the zero-fill shift", "[acmix_decomposition]") {
  const int p = GENERATE(0, 1, 2), q = GENERATE(0, 2);
  const std::array<int, 2> stride = GENERATE(std::array<int, 2>{1, 1}, std::array<int, 2>{2, 3});
  const std::array<int, 2> dilation = GENERATE(std::array<int, 2>{1, 1}, std::array<int, 2>{2, 1});
  const Image<double> g = Random(5).uniform_tensor<double, 3>({2, 7, 8});
  ConvGeometry geometry;
  geometry.padding = {1, 2, 2, 0};
  geometry.stride = stride, geometry.dilation = dilation;
  const std::array<int, 2> kernel{3, 3};
  const std::array<int, 2> out_size{conv_output_size(7, 1, 2, 3, stride[0], dilation[0]),
                                    conv_output_size(8, 2, 0, 3, stride[1], dilation[1])};
  OpCounter counter;
  const Image<double> depthwise = shift_depthwise(g, kernel, p, q, geometry, counter);
  const Image<double> shifted = shift_zero_fill(g, {p * dilation[0] - 1, q * dilation[1] - 2}, stride, out_size);
  REQUIRE(depthwise.shape() == shifted.shape());
  CHECK(compare(depthwise, shifted).max_abs == 0.0);
  // Spot check one pixel by hand: output (1, 1) reads g[c, 1*s1 + p*d1 - 1, 1*s2 + q*d2 - 2].
  const int si = stride[0] + p * dilation[0] - 1, sj = stride[1] + q * dilation[1] - 2;
  const double want = (si >= 0 && si < 7 && sj >= 0 && sj < 8) ? g(1, si, sj) : 0.0;
  CHECK(shifted(1, 1, 1) == want);
}

TEST_CASE("a grouped convolution decomposes into grouped 1x1 convolutions", "[acmix_decomposition]") {
  // groups 2 (6 -> 4), depthwise (4 -> 4) and depthwise with multiplier 2 (3 -> 6), 3 x 3, stride 2, reflect.
  const auto [c_in, c_out, groups] = GENERATE(std::array<std::size_t, 3>{6, 4, 2}, std::array<std::size_t, 3>{4, 4, 4},
                                              std::array<std::size_t, 3>{3, 6, 3});
  const Random random(12);
  const Image<double> x = random.stream(1).uniform_tensor<double, 3>({c_in, 8, 9});
  const Kernel<double> w = random.stream(2).uniform_tensor<double, 4>({c_out, c_in / groups, 3, 3});
  const std::optional<Vector<double>> b(random.stream(3).uniform_tensor<double, 1>({c_out}));
  ConvGeometry g;
  g.padding = {1, 1, 1, 1}, g.padding_mode = PaddingMode::reflect, g.stride = {2, 2}, g.groups = int(groups);

  const Image<double> expected = conv2d_blocked(x, w, b, g);
  OpCounter tensor_count, depthwise_count;
  const Image<double> by_shift = conv2d_decomposed(x, w, b, g, ShiftMethod::tensor_shift, tensor_count);
  const Image<double> by_depthwise = conv2d_decomposed(x, w, b, g, ShiftMethod::depthwise, depthwise_count);
  REQUIRE(by_shift.shape() == expected.shape());
  CHECK(compare(by_shift, expected).max_abs < 1e-13);
  CHECK(compare(by_depthwise, by_shift).max_abs == 0.0);
  // Stage I: 9 grouped products, C_out x C_in/groups by C_in/groups x (H*W) per group, on the padded 10 x 11 input.
  CHECK(tensor_count.total("stage1") == 9 * std::int64_t(c_out * (c_in / groups) * 10 * 11));
}
