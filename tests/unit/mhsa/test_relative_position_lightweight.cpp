// Relative-position attention (mhsa/relative_bias_attention) and the
// lightweight convolution (ops/lightweight_conv) against the PyTorch fixtures
// of tests/fixtures/positional/lightweight, and the claim's identity on the interior.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "metrics/compare.hpp"
#include "mhsa/relative_bias_attention.hpp"
#include "ops/lightweight_conv.hpp"
#include "torch_fixtures.hpp"

using namespace attnconv;

TEST_CASE("relative-bias attention and the lightweight convolution match PyTorch, for both fairseq classes",
          "[relative_position_lightweight]") {
  const auto fixtures = testing::torch_fixtures("positional", "lightweight");
  REQUIRE(fixtures.size() >= 5);
  for (const auto& fixture : fixtures) {
    INFO(fixture.entry.dump());
    const Sequence<double> x = fixture.load("input");
    const Matrix<double> w = fixture.load("kernel_logits");
    const std::size_t l = x.shape(1), k = w.shape(1) / 2;
    const HeadLayout layout = fixture.entry.value("class", "LightweightConv1dTBC") == "LightweightConv1d"
                                  ? HeadLayout::interleaved
                                  : HeadLayout::contiguous;
    const std::size_t padding_l = fixture.entry.value("padding", "same") == "causal" ? 2 * k : k;
    Sequence<double> conv = lightweight_conv1d(x, w, layout, padding_l);
    if (fixture.entry.value("bias", false)) conv += xt::view(fixture.load<Vector<double>>("bias"), xt::all(), xt::newaxis());
    CHECK(compare(conv, fixture.load<Sequence<double>>("lightweight")).max_abs <= 1e-15);
    CHECK(compare(relative_bias_attention(x, window_bias(w, l, BiasOutsideWindow::masked, padding_l), layout),
                  fixture.load<Sequence<double>>("masked")).max_abs <= 1e-15);
    CHECK(compare(relative_bias_attention(x, window_bias(w, l, BiasOutsideWindow::clipped, padding_l), layout),
                  fixture.load<Sequence<double>>("clipped")).max_abs <= 1e-15);
  }
}

TEST_CASE("fairseq's two classes differ with more than one head, agree with one", "[relative_position_lightweight]") {
  const Sequence<double> x = {{1, -2, 3, 0.5}, {0, 1, -1, 2}, {2, 2, -3, 1}, {-1, 0.5, 0, 1}};
  const Matrix<double> two = {{0.25, -0.5, 1.0}, {1.0, 0.0, -1.0}}, one = {{0.25, -0.5, 1.0}};
  CHECK(compare(lightweight_conv1d(x, two, HeadLayout::contiguous, 1), lightweight_conv1d(x, two, HeadLayout::interleaved, 1))
            .max_abs > 0.1);
  CHECK(compare(lightweight_conv1d(x, one, HeadLayout::contiguous, 1), lightweight_conv1d(x, one, HeadLayout::interleaved, 1))
            .max_abs == 0);
  // Causal (padding_l = K - 1): the first output sees only x[0].
  const Sequence<double> causal = lightweight_conv1d(x, one, HeadLayout::contiguous, 2);
  const double e = std::exp(1.0), total = std::exp(0.25) + std::exp(-0.5) + e;
  CHECK(causal(0, 0) == Approx(e / total * 1).epsilon(1e-14));
}

TEST_CASE("masked: equal on the interior, different in the end bands", "[relative_position_lightweight]") {
  const Sequence<double> x = {{1, -2, 3, 0.5, -1, 2, 4, -3}};
  const Matrix<double> w = {{0.25, -0.5, 1.0}};  // k = 1
  const Sequence<double> attention = relative_bias_attention(x, window_bias(w, 8, BiasOutsideWindow::masked));
  const Sequence<double> conv = lightweight_conv1d(x, w);
  for (std::size_t i = 1; i < 7; ++i) CHECK(std::abs(attention(0, i) - conv(0, i)) <= 1e-15);
  // token 0: the attention renormalises over its keys 0 and 1, the convolution weighs a padded zero.
  const double e0 = std::exp(-0.5), e1 = std::exp(1.0), em = std::exp(0.25);
  CHECK(attention(0, 0) == Approx((e0 * 1 + e1 * -2) / (e0 + e1)).epsilon(1e-14));
  CHECK(conv(0, 0) == Approx((e0 * 1 + e1 * -2) / (em + e0 + e1)).epsilon(1e-14));
  CHECK(std::abs(attention(0, 0) - conv(0, 0)) > 0.1);
}

TEST_CASE("clipped: every key has positive weight", "[relative_position_lightweight]") {
  const Matrix<double> w = {{0.0, 1.0, 0.0}};
  const Vector<double> row = relative_bias_row(window_bias(w, 10, BiasOutsideWindow::clipped), 0, 5);
  double outside = 0;
  for (std::size_t j = 0; j < 10; ++j) {
    CHECK(row(j) > 0);
    if (j < 4 || j > 6) outside += row(j);
  }
  CHECK(outside == Approx(7 / (9 + std::exp(1.0))).epsilon(1e-14));  // 7 keys of weight e^0 outside
  const Matrix<double> two_heads = {{0.0, 1.0, 0.0}, {0.0, 1.0, 0.0}};  // do not split 3 channels
  CHECK_THROWS_AS(lightweight_conv1d(Sequence<double>(xt::zeros<double>({3, 4})), two_heads), std::invalid_argument);
}
