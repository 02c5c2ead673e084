// GPSA (mhsa/gpsa) with ConViT's local init (construction/convit_init) against
// the PyTorch fixtures of tests/fixtures/positional/gpsa, written in ConViT's
// own layout (its rel_indices order and head numbering), and the init's identity.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "construction/convit_init.hpp"
#include "metrics/compare.hpp"
#include "mhsa/gpsa.hpp"
#include "torch_fixtures.hpp"

using namespace attnconv;

TEST_CASE("GPSA with ConViT's local init matches ConViT's formulas in PyTorch", "[convit_gpsa]") {
  for (const auto& fixture : testing::torch_fixtures("positional", "gpsa")) {
    const nlohmann::json& entry = fixture.entry;
    INFO(entry.dump());
    const std::size_t heads = entry["heads"], side = entry["side"], d = heads * std::size_t(entry["head_dim"]);
    const Matrix<double> qk = fixture.load("qk_weight"), proj = fixture.load("proj_weight");
    const Vector<double> bias = fixture.load("proj_bias");
    const GpsaLayer<double> layer{
        .heads = heads,
        .w_qry = xt::transpose(xt::view(qk, xt::range(0, d), xt::all())),
        .w_key = xt::transpose(xt::view(qk, xt::range(d, 2 * d), xt::all())),
        .w_val = xt::eye<double>(d),
        .w_proj = xt::transpose(proj),
        .b_proj = bias,
        .v_pos = convit_v_pos<double>(heads, entry["locality_strength"]),
        .gating = xt::ones<double>({heads}) * double(entry["gating"])};
    const Matrix<double> y = gpsa_forward(layer, Matrix<double>(fixture.load("tokens")), side, side);
    const Matrix<double> expected = fixture.load("output");
    CHECK(compare(y, expected).max_abs <= 1e-13 * double(xt::amax(xt::abs(expected))()));
  }
}

TEST_CASE("ConViT's v_pos scores are -strength (|delta - Delta|^2 - |Delta|^2)", "[convit_gpsa]") {
  for (const std::size_t heads : {4, 9, 16}) {
    const Matrix<double> v = convit_v_pos<double>(heads, 2.5), centers = convit_centers(heads);
    for (std::size_t h = 0; h < heads; ++h)
      for (int d1 = -3; d1 <= 3; ++d1)
        for (int d2 = -3; d2 <= 3; ++d2) {
          const double e1 = d1 - centers(h, 0), e2 = d2 - centers(h, 1);
          const double delta2 = centers(h, 0) * centers(h, 0) + centers(h, 1) * centers(h, 1);
          CHECK(v(h, 0) * d1 + v(h, 1) * d2 + v(h, 2) * (d1 * d1 + d2 * d2) ==
                Approx(-2.5 * (e1 * e1 + e2 * e2 - delta2)).margin(1e-12));
        }
  }
  CHECK(convit_centers(9)(1, 0) == 0.0);   // head 1 = h1 1 + 3 h2 0: Delta = (1 - 1, 0 - 1)
  CHECK(convit_centers(9)(1, 1) == -1.0);
  CHECK(convit_centers(4)(0, 0) == -0.5);  // even K: half-integer centres
  CHECK_THROWS_AS(convit_kernel_size(8), std::invalid_argument);
}

TEST_CASE("GPSA attention rows are distributions; gate 0 is content only", "[convit_gpsa]") {
  const std::size_t heads = 4, d = 8, side = 4;
  Matrix<double> x = xt::zeros<double>({side * side, d});
  for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = std::sin(double(i));
  GpsaLayer<double> layer{.heads = heads, .w_qry = xt::eye<double>(d), .w_key = xt::eye<double>(d) * 0.5,
                          .w_val = xt::eye<double>(d), .w_proj = xt::eye<double>(d), .b_proj = xt::zeros<double>({d}),
                          .v_pos = convit_v_pos<double>(heads, 1.0), .gating = xt::ones<double>({heads})};
  const Matrix<double> a = gpsa_attention(layer, x, side, side, 5);
  for (std::size_t h = 0; h < heads; ++h) CHECK(double(xt::sum(xt::view(a, h))()) == Approx(1.0).epsilon(1e-14));
  layer.gating = xt::ones<double>({heads}) * -800.0;  // sigma = 0 exactly: v_pos plays no part
  const Matrix<double> content = gpsa_attention(layer, x, side, side, 5);
  layer.v_pos = convit_v_pos<double>(heads, 7.0);
  CHECK(compare(gpsa_attention(layer, x, side, side, 5), content).max_abs == 0.0);
}
