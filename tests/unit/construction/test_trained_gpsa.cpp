// A trained GPSA in PyTorch's layout (construction/trained_gpsa) against the
// GPSA of mhsa/gpsa (our (row, column), (in, out) statement of the same
// Eq. 5, itself checked against PyTorch in test_convit_gpsa.cpp): two
// independent computations must agree once the layouts are converted —
// ConViT's pos_proj columns (δ_col, δ_row, ‖δ‖²) to v_pos (δ_row, δ_col, ‖δ‖²),
// nn.Linear weights transposed.
#include <catch2/catch.hpp>
#include <cmath>
#include <xtensor/xview.hpp>

#include "construction/trained_gpsa.hpp"
#include "metrics/compare.hpp"
#include "mhsa/gpsa.hpp"
#include "tensor/random.hpp"

using namespace attnconv;

namespace {

TorchGpsa<double> random_layer(std::size_t dim, std::size_t heads, std::uint64_t seed) {
  Random r(seed);
  TorchGpsa<double> l;
  l.heads = heads;
  l.w_qk = r.stream(1).uniform_tensor<double, 2>({2 * dim, dim});
  l.b_qk = xt::zeros<double>({2 * dim});
  l.w_v = r.stream(2).uniform_tensor<double, 2>({dim, dim});
  l.b_v = xt::zeros<double>({dim});
  l.w_proj = r.stream(3).uniform_tensor<double, 2>({dim, dim});
  l.b_proj = r.stream(4).uniform_tensor<double, 1>({dim});
  l.w_pos = r.stream(5).uniform_tensor<double, 2>({heads, 3});
  l.b_pos = r.stream(6).uniform_tensor<double, 1>({heads}) * 3.0;  // a per-head constant: the softmax cancels it
  l.gating = r.stream(7).uniform_tensor<double, 1>({heads}) * 3.0;
  return l;
}

}  // namespace

TEST_CASE("trained GPSA in PyTorch's layout equals mhsa/gpsa's GPSA with the layout converted", "[trained_gpsa]") {
  const std::size_t dim = 8, heads = 4, side = 4, tokens = side * side, samples = 2;
  const TorchGpsa<double> l = random_layer(dim, heads, 23);
  const xt::xtensor<double, 3> x = Random(24).uniform_tensor<double, 3>({samples, tokens, dim});
  const AttentionForward<double> f = gpsa_torch_forward(l, x, int(side), int(side));

  Matrix<double> v_pos = xt::zeros<double>({heads, std::size_t(3)});
  for (std::size_t h = 0; h < heads; ++h) {
    v_pos(h, 0) = l.w_pos(h, 1);  // δ_row
    v_pos(h, 1) = l.w_pos(h, 0);  // δ_col
    v_pos(h, 2) = l.w_pos(h, 2);
  }
  const GpsaLayer<double> ours{.heads = heads,
                               .w_qry = xt::transpose(xt::view(l.w_qk, xt::range(0, dim), xt::all())),
                               .w_key = xt::transpose(xt::view(l.w_qk, xt::range(dim, 2 * dim), xt::all())),
                               .w_val = xt::transpose(l.w_v),
                               .w_proj = xt::transpose(l.w_proj),
                               .b_proj = l.b_proj,
                               .v_pos = v_pos,
                               .gating = l.gating};
  for (std::size_t n = 0; n < samples; ++n) {
    const Matrix<double> tokens_n = xt::view(x, n);
    const Matrix<double> y = gpsa_forward(ours, tokens_n, side, side);
    const Matrix<double> y_torch = xt::view(f.y, n);
    CHECK(compare(y_torch, y).max_abs <= 1e-13);
    for (std::size_t q = 0; q < tokens; ++q) {
      const Matrix<double> a = gpsa_attention(ours, tokens_n, side, side, q);
      const Matrix<double> a_torch = xt::view(f.p, n, xt::all(), q, xt::all());
      CHECK(compare(a_torch, a).max_abs <= 1e-14);
    }
  }
}

TEST_CASE("trained GPSA: rows are distributions, K_q(δ) = Σ_h A_h M_h rebuilds the output, biases fold", "[trained_gpsa]") {
  const std::size_t dim = 6, heads = 3, side = 3, tokens = side * side;
  TorchGpsa<double> l = random_layer(dim, heads, 5);
  l.b_qk = Random(6).uniform_tensor<double, 1>({2 * dim});
  l.b_v = Random(7).uniform_tensor<double, 1>({dim});
  const xt::xtensor<double, 3> x = Random(8).uniform_tensor<double, 3>({1, tokens, dim});
  const AttentionForward<double> f = gpsa_torch_forward(l, x, int(side), int(side));
  const xt::xtensor<double, 3> m = head_maps(l);
  const Vector<double> b = folded_bias(l);
  for (std::size_t q = 0; q < tokens; ++q) {
    for (std::size_t h = 0; h < heads; ++h) {
      double total = 0;
      for (std::size_t k = 0; k < tokens; ++k) total += f.p(0, h, q, k);
      CHECK(total == Approx(1.0).margin(1e-15));
    }
    for (std::size_t o = 0; o < dim; ++o) {
      double y = b(o);
      for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t k = 0; k < tokens; ++k)
          for (std::size_t i = 0; i < dim; ++i) y += f.p(0, h, q, k) * m(h, o, i) * x(0, k, i);
      CHECK(y == Approx(f.y(0, q, o)).margin(1e-13));
    }
  }
  const std::vector<double> s = gate_sigmas(l);
  for (std::size_t h = 0; h < heads; ++h) CHECK(s[h] == Approx(1 / (1 + std::exp(-l.gating(h)))).epsilon(1e-15));
}

TEST_CASE("trained GPSA refuses shapes that do not fit", "[trained_gpsa]") {
  const TorchGpsa<double> l = random_layer(8, 4, 1);
  const xt::xtensor<double, 3> x = xt::zeros<double>({1, 16, 8});
  CHECK_THROWS_AS(gpsa_torch_forward(l, x, 2, 4), std::invalid_argument);  // 8 tokens of a 2x4 grid, 16 given
  TorchGpsa<double> transposed = l;
  transposed.w_qk = xt::transpose(l.w_qk);
  CHECK_THROWS_AS(gpsa_torch_forward(transposed, x, 4, 4), std::invalid_argument);
}
