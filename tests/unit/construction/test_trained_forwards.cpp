// The forwards of the trained NAT and Gaussian layers (issue 23) against other
// code paths of the library: the NAT layer's output against NATTEN's
// neighbourhood attention of src/local (neighborhood_attention on the scaled
// q, k, v of its qkv, then proj), the Gaussian layer's against Eq. 8 through
// the dense MHSA engine (to_mhsa_layer, content terms included); and both
// attentions are distributions over the keys each query may see.
#include <catch2/catch.hpp>
#include <cmath>
#include <xtensor/xview.hpp>

#include "construction/trained_gaussian.hpp"
#include "local/neighborhood_attention.hpp"
#include "local/trained_neighborhood.hpp"
#include "metrics/compare.hpp"
#include "mhsa/engine.hpp"
#include "tensor/random.hpp"

using namespace attnconv;

TEST_CASE("The trained NAT forward is src/local's neighbourhood attention between qkv and proj", "[trained_forwards]") {
  constexpr std::size_t N = 2, H = 7, W = 6, D = 6, HEADS = 2, HD = D / HEADS;
  constexpr int K = 3;
  for (int dilation : {1, 2}) {
    Random random(31 + std::uint64_t(dilation));
    TrainedNeighborhood<double> layer{.heads = HEADS,
                                      .kernel = K,
                                      .dilation = dilation,
                                      .scale = 1 / std::sqrt(double(HD)),
                                      .w_qkv = random.stream(1).uniform_tensor<double, 2>({3 * D, D}),
                                      .b_qkv = random.stream(2).uniform_tensor<double, 1>({3 * D}),
                                      .rpb = random.stream(3).uniform_tensor<double, 3>({HEADS, 2 * K - 1, 2 * K - 1}) * 2.0,
                                      .w_proj = random.stream(4).uniform_tensor<double, 2>({D, D}),
                                      .b_proj = random.stream(5).uniform_tensor<double, 1>({D})};
    const xt::xtensor<double, 3> x = random.stream(6).uniform_tensor<double, 3>({N, H * W, D}) * 2.0;
    const NeighborhoodForward<double> forward = trained_neighborhood_forward(layer, x, int(H), int(W));
    for (std::size_t n = 0; n < N; ++n) {
      HeadMaps<double> q = xt::zeros<double>({HEADS, H, W, HD}), k = q, v = q;
      for (std::size_t t = 0; t < H * W; ++t)
        for (std::size_t r = 0; r < 3 * D; ++r) {
          double s = layer.b_qkv(r);
          for (std::size_t i = 0; i < D; ++i) s += layer.w_qkv(r, i) * x(n, t, i);
          HeadMaps<double>& target = r < D ? q : r < 2 * D ? k : v;
          target((r % D) / HD, t / W, t % W, r % HD) = r < D ? s * layer.scale : s;
        }
      const HeadMaps<double> o = neighborhood_attention(q, k, v, layer.rpb, K, dilation);
      double worst = 0;
      for (std::size_t t = 0; t < H * W; ++t)
        for (std::size_t r = 0; r < D; ++r) {
          double s = layer.b_proj(r);
          for (std::size_t c = 0; c < D; ++c) s += layer.w_proj(r, c) * o(c / HD, t / W, t % W, c % HD);
          worst = std::max(worst, std::abs(s - forward.y(n, t, r)));
        }
      CHECK(worst < 1e-12);
      for (std::size_t h = 0; h < HEADS; ++h)
        for (std::size_t t = 0; t < H * W; ++t) {
          double total = 0;
          int seen = 0;
          for (std::size_t key = 0; key < H * W; ++key) {
            total += forward.p(n, h, t, key);
            seen += forward.p(n, h, t, key) > 0 ? 1 : 0;
          }
          CHECK(std::abs(total - 1) < 1e-14);
          CHECK(seen == K * K);
        }
    }
  }
}

TEST_CASE("The trained Gaussian forward is Eq. 8 with the quadratic encoding on the unpadded image", "[trained_forwards]") {
  constexpr std::size_t N = 2, H = 5, W = 6, D_IN = 3, D_H = 2, D_K = 2, D_OUT = 4, HEADS = 3;
  Random random(37);
  GaussianAttention<double> layer;
  layer.centers = random.stream(1).uniform_tensor<double, 2>({HEADS, 2}) * 2.0;
  const xt::xtensor<double, 3> s = random.stream(2).uniform_tensor<double, 3>({HEADS, 2, 2});
  layer.precisions = xt::zeros<double>({HEADS, std::size_t(2), std::size_t(2)});
  for (std::size_t h = 0; h < HEADS; ++h)  // S S^T / 2: symmetric positive semi-definite
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t j = 0; j < 2; ++j) layer.precisions(h, i, j) = 0.5 * (s(h, i, 0) * s(h, j, 0) + s(h, i, 1) * s(h, j, 1));
  layer.w_val = random.stream(3).uniform_tensor<double, 3>({HEADS, D_IN, D_H});
  layer.w_out = random.stream(4).uniform_tensor<double, 2>({HEADS * D_H, D_OUT});
  layer.b_out = random.stream(5).uniform_tensor<double, 1>({D_OUT});
  layer.w_qry = random.stream(6).uniform_tensor<double, 3>({HEADS, D_IN, D_K});
  layer.w_key = random.stream(7).uniform_tensor<double, 3>({HEADS, D_IN, D_K});
  const xt::xtensor<double, 3> x = random.stream(8).uniform_tensor<double, 3>({N, H * W, D_IN});
  const AttentionForward<double> forward = gaussian_grid_forward(layer, x, int(H), int(W));
  const MhsaLayer<double> eq8 = to_mhsa_layer(layer);
  for (std::size_t n = 0; n < N; ++n) {
    const Matrix<double> tokens = xt::view(x, n);
    const EngineResult<double> dense = run_mhsa(Engine::dense, eq8, tokens, H, W);
    const Matrix<double> ours = xt::view(forward.y, n);
    CHECK(compare(ours, dense.y).rel_l2 < 1e-13);
    for (std::size_t h = 0; h < HEADS; ++h)
      for (std::size_t q = 0; q < H * W; ++q) CHECK(std::abs(xt::sum(xt::view(forward.p, n, h, q))() - 1) < 1e-14);
  }
  // The head maps are (W_val^h W_out^h)^T.
  const xt::xtensor<double, 3> m = gaussian_head_maps(layer);
  const Matrix<double> w_val1 = xt::view(layer.w_val, 1), w_out1 = xt::view(layer.w_out, xt::range(D_H, 2 * D_H));
  for (std::size_t o = 0; o < D_OUT; ++o)
    for (std::size_t i = 0; i < D_IN; ++i) {
      double expected = 0;
      for (std::size_t j = 0; j < D_H; ++j) expected += w_val1(i, j) * w_out1(j, o);
      CHECK(std::abs(m(1, o, i) - expected) < 1e-15);
    }
}
