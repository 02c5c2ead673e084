// The absolute-encoding construction (construction/absolute_encoding.hpp)
// against the PyTorch fixtures of tests/fixtures/positional/absolute (written
// from the formulas of Eq. 7 and the 4 x 4 matrix M), against the plain-loop
// reference MHSA (Eq. 8 on the tokens with positions), and M's identity.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <xtensor/xnpy.hpp>

#include "construction/absolute_encoding.hpp"
#include "construction/theorem1.hpp"
#include "cases/case_loader.hpp"
#include "run/runner.hpp"
#include "metrics/compare.hpp"
#include "mhsa/dense_engine.hpp"
#include "ops/padding.hpp"
#include "reference/mhsa.hpp"
#include "tensor/random.hpp"
#include "torch_fixtures.hpp"

using namespace attnconv;
using nlohmann::json;

TEST_CASE("P_q M P_k^T = -alpha |k - q - Delta|^2 + alpha |q + Delta|^2", "[absolute_encoding]") {
  for (const double alpha : {1.0, 2.5, 60.0})
    for (int d1 = -2; d1 <= 2; ++d1)
      for (int d2 = -1; d2 <= 2; ++d2) {
        const auto m = absolute_block(alpha, {d1, d2});
        for (int q1 = 0; q1 < 5; ++q1)
          for (int q2 = 0; q2 < 4; ++q2)
            for (int k1 = 0; k1 < 5; ++k1)
              for (int k2 = 0; k2 < 4; ++k2) {
                const double pq[4] = {double(q1), double(q2), double(q1 * q1 + q2 * q2), 1};
                const double pk[4] = {double(k1), double(k2), double(k1 * k1 + k2 * k2), 1};
                double score = 0;
                for (int a = 0; a < 4; ++a)
                  for (int c = 0; c < 4; ++c) score += pq[a] * m[a][c] * pk[c];
                const double e1 = k1 - q1 - d1, e2 = k2 - q2 - d2, t1 = q1 + d1, t2 = q2 + d2;
                CHECK(score == -alpha * (e1 * e1 + e2 * e2) + alpha * (t1 * t1 + t2 * t2));
              }
      }
}

TEST_CASE("the absolute-encoding layer matches the PyTorch fixtures and the reference MHSA", "[absolute_encoding]") {
  for (const auto& fixture : testing::torch_fixtures("positional", "absolute")) {
    const nlohmann::json& entry = fixture.entry;
    INFO(entry.dump());
    const Image<double> x = fixture.load("input");
    const Kernel<double> w = fixture.load("weight");
    const Vector<double> b = fixture.load("bias");
    const Image<double> torch_attention = fixture.load("attention");
    const std::array<int, 2> kernel{int(w.shape(2)), int(w.shape(3))};
    const double alpha = entry["alpha"];
    const PositionChannels where = entry["positions"] == "added" ? PositionChannels::added : PositionChannels::reserved;

    Theorem1Options options;
    options.heads = kernel[0] * kernel[1], options.head_dim = int(w.shape(0)), options.alpha = alpha;
    std::vector<std::optional<std::array<int, 2>>> targets;
    for (int h = 0; h < options.heads; ++h) targets.push_back(target_shift(h / kernel[1], h % kernel[1], kernel, {1, 1}));
    const MhsaLayer<double> layer = absolute_encoding_layer(theorem1_layer<double>(w, b, options), targets, alpha, where);

    const auto padding = entry["padding"];
    const ConvGeometry g{.padding = {padding[0], padding[1], padding[2], padding[3]}};
    const Image<double> xpad = pad(x, g.padding, PaddingMode::zeros);
    const std::size_t hp = xpad.shape(1), wp = xpad.shape(2);
    const Matrix<double> tokens = with_positions(image_to_tokens(xpad), hp, wp, where);
    const std::array<int, 2> out_size{int(x.shape(1)), int(x.shape(2))};
    const Image<double> dense =
        align_to_convolution(tokens_to_image(mhsa_dense(layer, tokens, hp, wp), hp, wp), kernel, g, out_size);
    const Image<double> plain = align_to_convolution(
        tokens_to_image(Matrix<double>(xt::cast<double>(reference::mhsa(layer, tokens, hp, wp))), hp, wp), kernel, g,
        out_size);
    const double scale = double(xt::amax(xt::abs(torch_attention))());
    CHECK(compare(dense, torch_attention).max_abs <= 1e-12 * scale);
    CHECK(compare(plain, torch_attention).max_abs <= 1e-12 * scale);
  }
}

TEST_CASE("positions added to the image's channels leave content terms in the scores", "[absolute_encoding]") {
  const Matrix<double> tokens = {{0.5, -0.25, 1, 0.75}, {0.125, 0.5, -1, 0.25}};
  const Matrix<double> added = with_positions(tokens, 1, 2, PositionChannels::added);
  const Matrix<double> reserved = with_positions(tokens, 1, 2, PositionChannels::reserved);
  REQUIRE(added.shape(1) == 4);
  REQUIRE(reserved.shape(1) == 8);
  // pixel (0, 1): P = (0, 1, 1, 1)
  CHECK(added(1, 1) == 1.5);
  CHECK(reserved(1, 4) == 0);
  CHECK(reserved(1, 5) == 1);
  CHECK(reserved(1, 6) == 1);
  CHECK(reserved(1, 7) == 1);
  CHECK(reserved(1, 1) == 0.5);
  CHECK_THROWS_AS(with_positions(Matrix<double>(xt::zeros<double>({2, 3})), 1, 2, PositionChannels::added),
                  std::invalid_argument);
}

namespace {
// max |absolute - relative| of the two constructions of one 3 x 3 convolution on
// an n x n float32 image (zero padding 1), at an alpha whose scores are not exact.
float absolute_minus_relative(std::size_t n) {
  Random random(17);
  const Image<float> x = random.stream(1).uniform_tensor<float, 3>({3, n, n});
  const Kernel<float> w = random.stream(2).uniform_tensor<float, 4>({3, 3, 3, 3});
  Theorem1Options options;
  options.heads = 9, options.head_dim = 3, options.alpha = 3.3;
  const MhsaLayer<float> relative = theorem1_layer<float>(w, std::nullopt, options);
  std::vector<std::optional<std::array<int, 2>>> targets;
  for (int h = 0; h < 9; ++h) targets.push_back(target_shift(h / 3, h % 3, {3, 3}, {1, 1}));
  const MhsaLayer<float> absolute = absolute_encoding_layer(relative, targets, 3.3, PositionChannels::reserved);
  const Matrix<float> tokens = image_to_tokens(pad(x, Padding{1, 1, 1, 1}, PaddingMode::zeros));
  const Matrix<float> a = mhsa_dense(absolute, with_positions(tokens, n + 2, n + 2, PositionChannels::reserved), n + 2, n + 2);
  return float(compare(a, mhsa_dense(relative, tokens, n + 2, n + 2)).max_abs);
}
}  // namespace

TEST_CASE("the absolute encoding's round-off grows with the image, the scores being of size alpha H^2",
          "[absolute_encoding]") {
  const float small = absolute_minus_relative(6), large = absolute_minus_relative(30);
  INFO("6 x 6: " << small << ", 30 x 30: " << large);
  CHECK(small > 0);
  CHECK(large > 4 * small);  // (32 / 8)^2 = 16 in score size
}

TEST_CASE("a layer off by its finite-alpha leak is not 'holds to round-off', however large the score round-off",
          "[absolute_encoding]") {
  // float32, alpha 3.3, 64 x 64: the absolute scores' round-off allowance (~1.9) exceeds the error (~1.1),
  // which is the leak at this alpha (the relative construction is as far off).
  const json object = {{"name", "leak"},
                       {"proof", "cordonnier2020.absolute_encoding"},
                       {"params", {{"image", {64, 64}}, {"kernel", 3}, {"in_channels", 3}, {"out_channels", 3},
                                   {"heads", 9}, {"head_dim", 3}, {"padding", 1}, {"alpha", 3.3},
                                   {"dtype", "float32"}, {"seed", 174}}}};
  const json result = run_case(expand_case(object, "cases/x.json", 0).at(0), RunOptions{});
  const json& m = result["metrics"];
  INFO(result.dump());
  REQUIRE(m["max_abs"].get<double>() <= m["roundoff_allowance"].get<double>());  // the trap this guards
  CHECK(m["relative_max_abs"].get<double>() > 0.1);
  CHECK(result["status"] == "pass");
  CHECK(result["verdict"] == "bound holds");
}
