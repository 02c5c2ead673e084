#include <catch2/catch.hpp>
#include <cmath>

#include "cli/plot.hpp"
#include "harness/case_loader.hpp"
#include "harness/proof.hpp"
#include "construction/theorem1.hpp"
#include "mhsa/attention_row.hpp"
#include "mhsa/dense_engine.hpp"
#include "ops/padding.hpp"
#include "tensor/random.hpp"

using namespace attnconv;

TEST_CASE("one query's attention rows agree with the dense engine and the construction", "[plot]") {
  // A general layer: the dense engine's output for query q is sum_k P_qk X_k W_val W_out + b.
  Random random(5);
  const std::size_t h = 5, w = 6, d_in = 3;
  const Kernel<double> conv = random.stream(1).uniform_tensor<double, 4>({2, d_in, 3, 3});
  Theorem1Options options;
  options.heads = 9, options.head_dim = 2, options.alpha = 1.5;
  MhsaLayer<double> layer = theorem1_layer<double>(conv, std::nullopt, options);
  for (auto& head : layer.heads) {  // make it general: content terms non-zero
    head.w_qry = random.stream(2).uniform_tensor<double, 2>({d_in, head.w_qry.shape(1)});
    head.w_key = random.stream(3).uniform_tensor<double, 2>({d_in, head.w_key.shape(1)});
    head.u = random.stream(4).uniform_tensor<double, 1>({head.u.shape(0)});
  }
  const Matrix<double> x = random.stream(6).uniform_tensor<double, 2>({h * w, d_in});
  const std::size_t query = 2 * w + 3;
  const Matrix<double> p = attention_rows(layer, x, h, w, query);
  const Matrix<double> y = mhsa_dense(layer, x, h, w);
  Vector<double> expected = layer.b_out;
  for (std::size_t head = 0; head < layer.heads.size(); ++head)
    for (std::size_t k = 0; k < h * w; ++k)
      for (std::size_t d = 0; d < layer.head_dim(); ++d) {
        double value = 0;
        for (std::size_t c = 0; c < d_in; ++c) value += x(k, c) * layer.heads[head].w_val(c, d);
        for (std::size_t o = 0; o < layer.out_dim(); ++o)
          expected(o) += p(head, k) * value * layer.w_out(head * layer.head_dim() + d, o);
      }
  for (std::size_t o = 0; o < layer.out_dim(); ++o) CHECK(y(query, o) == Approx(expected(o)).margin(1e-12));
  for (std::size_t head = 0; head < layer.heads.size(); ++head) {
    double sum = 0;
    for (std::size_t k = 0; k < h * w; ++k) sum += p(head, k);
    CHECK(sum == Approx(1.0).margin(1e-12));
  }
}

TEST_CASE("under the construction at large alpha each head attends to q + Delta", "[plot]") {
  Random random(7);
  const Kernel<double> conv = random.stream(1).uniform_tensor<double, 4>({2, 2, 3, 3});
  Theorem1Options options;
  options.heads = 9, options.head_dim = 2, options.alpha = 60;
  const MhsaLayer<double> layer = theorem1_layer<double>(conv, std::nullopt, options);
  const std::size_t h = 6, w = 7, qi = 3, qj = 2;
  const Matrix<double> x = random.stream(2).uniform_tensor<double, 2>({h * w, 2});
  const Matrix<double> p = attention_rows(layer, x, h, w, qi * w + qj);
  for (int head = 0; head < 9; ++head) {
    const auto shift = target_shift(head / 3, head % 3, {3, 3}, {1, 1});
    CHECK(p(std::size_t(head), std::size_t((int(qi) + shift[0]) * int(w) + int(qj) + shift[1])) >= 1 - 4 * std::exp(-60.0) - 1e-15);  // 1 - P <= eps(alpha) ~ 4 e^-alpha, plus round-off
  }
}

TEST_CASE("the attention a Theorem 1 figure draws is the checked layer's own, encoding and precision included",
          "[plot]") {
  const std::vector<Case> cases = load_case_text(R"({"cases": [{"name": "general", "proof": "cordonnier2020.theorem1",
      "params": {"image": [6, 6], "kernel": [3, 3], "padding": 1, "in_channels": 2, "out_channels": 2, "heads": 9,
                 "head_dim": 2, "alpha": 0.5, "encoding": "quadratic_general", "seed": 3}}]})",
                                                 "figure_case.json");
  REQUIRE(cases.size() == 1);
  const ProofDef* proof = find_proof("cordonnier2020.theorem1");
  REQUIRE(proof->figures);
  const std::vector<FigureData> figures = proof->figures(cases[0]);
  REQUIRE(figures.size() == 1);
  REQUIRE(figures[0].panels.size() == 9);
  REQUIRE(figures[0].marker);

  // The layer as the proof checks it: the seed's weights, the generalised
  // encoding with the seed's per-head precisions.
  const Random random(3);
  const Image<double> x = random.stream(purpose_id("input")).uniform_tensor<double, 3>({2, 6, 6});
  const Kernel<double> w = random.stream(purpose_id("conv_weight")).uniform_tensor<double, 4>({2, 2, 3, 3});
  Theorem1Options options;
  options.heads = 9, options.head_dim = 2, options.alpha = 0.5;
  options.encoding = Encoding::quadratic_general;
  options.precision = random_precisions(3, 9);
  const auto probabilities = [&](const Theorem1Options& o) {
    const MhsaLayer<double> layer = theorem1_layer<double>(w, std::nullopt, o);
    const Image<double> xpad = pad(x, Padding{1, 1, 1, 1}, PaddingMode::zeros);
    const auto [qi, qj] = *figures[0].marker;
    CHECK(qi == 4);  // the centre output pixel (3, 3), at padded coordinates (3 + 1, 3 + 1)
    CHECK(qj == 4);
    return attention_rows(layer, image_to_tokens(xpad), 8, 8, std::size_t(qi) * 8 + std::size_t(qj));
  };
  const Matrix<double> own = probabilities(options);
  Theorem1Options quadratic = options;
  quadratic.encoding = Encoding::quadratic, quadratic.precision.clear();
  const Matrix<double> theorem = probabilities(quadratic);

  double drawn_vs_own = 0, drawn_vs_quadratic = 0;
  for (std::size_t h = 0; h < 9; ++h) {
    const auto& values = figures[0].panels[h].values;
    REQUIRE(values.shape(0) == 8);
    REQUIRE(values.shape(1) == 8);
    for (std::size_t i = 0; i < 8; ++i)
      for (std::size_t j = 0; j < 8; ++j) {
        drawn_vs_own = std::max(drawn_vs_own, std::abs(values(i, j) - own(h, i * 8 + j)));
        drawn_vs_quadratic = std::max(drawn_vs_quadratic, std::abs(values(i, j) - theorem(h, i * 8 + j)));
      }
  }
  CHECK(drawn_vs_own == 0);
  CHECK(drawn_vs_quadratic > 0.1);  // the quadratic encoding's attention is visibly another figure
}
