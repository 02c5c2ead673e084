#include <catch2/catch.hpp>
#include <cmath>

#include "cli/plot.hpp"
#include "construction/theorem1.hpp"
#include "mhsa/attention_row.hpp"
#include "mhsa/dense_engine.hpp"
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
