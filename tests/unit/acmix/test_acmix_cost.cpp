// The multiply-adds the ACmix functions count are the ones their loops run,
// and they match the paper's Table 1 formulas for convolution and self-attention.
#include <catch2/catch.hpp>

#include "acmix/conv_decomposition.hpp"
#include "acmix/random_weights.hpp"
#include "proof/proof.hpp"
#include "tensor/random.hpp"

using namespace attnconv;

TEST_CASE("counted Stage I / Stage II multiply-adds follow the formulas", "[acmix_cost]") {
  const AcmixConfig cfg = GENERATE(AcmixConfig{4, 8, 2, 3, 3, 1}, AcmixConfig{6, 6, 3, 5, 5, 2},
                                   AcmixConfig{3, 4, 4, 7, 7, 1}, AcmixConfig{8, 4, 1, 3, 5, 3});
  const std::int64_t h = 9, w = 7, c_in = cfg.in_channels, c_out = cfg.out_channels, n = cfg.heads;
  const std::int64_t k = cfg.kernel_conv, ka = cfg.kernel_att, hd = c_out / n;
  const std::int64_t hw_out = std::int64_t(cfg.output_size(int(h))) * cfg.output_size(int(w));
  const AcmixWeights<double> weights = random_acmix_weights<double>(cfg, AcmixInit{}, Random(1));
  const Image<double> x = Random(2).uniform_tensor<double, 3>({std::size_t(c_in), std::size_t(h), std::size_t(w)});

  OpCounter acmix;
  acmix_forward(cfg, weights, x, acmix);
  CHECK(acmix.total("stage1.projection") == 3 * c_in * c_out * h * w);
  CHECK(acmix.total("stage2.attention.scores") == ka * ka * c_out * hw_out);
  CHECK(acmix.total("stage2.attention.aggregation") == ka * ka * c_out * hw_out);
  CHECK(acmix.total("stage2.attention.position") == 2 * hd * h * w);
  CHECK(acmix.total("stage2.conv.fc") == k * k * 3 * n * hd * h * w);          // 3N x k^2, for each head_dim index
  CHECK(acmix.total("stage2.conv.dep_conv") == c_out * k * k * k * k * hw_out);  // dense grouped convolution

  OpCounter conv;
  ConvGeometry g;
  g.padding = {int(k / 2), int(k / 2), int(k / 2), int(k / 2)}, g.stride = {cfg.stride, cfg.stride};
  const Kernel<double> kernel = Random(3).uniform_tensor<double, 4>({std::size_t(c_out), std::size_t(c_in), std::size_t(k), std::size_t(k)});
  conv2d_decomposed(x, kernel, std::optional<Vector<double>>{}, g, ShiftMethod::tensor_shift, conv);
  CHECK(conv.total("stage1") == k * k * c_in * c_out * h * w);
  CHECK(conv.total("stage2") == k * k * c_out * hw_out);
}

TEST_CASE("cost_table proof: measured rows equal the paper's formulas and the fc discrepancy is stated", "[acmix_cost]") {
  const ProofDef* proof = find_proof("acmix2022.cost_table");
  REQUIRE(proof);
  Case c;
  c.name = "cost";
  c.proof = proof->id;
  c.params = {{"image", {8, 8}}, {"in_channels", 64}, {"out_channels", 64}, {"heads", 4}, {"kernel_att", 3},
              {"kernel_conv", 3}, {"stride", 1}, {"dtype", "float64"}, {"seed", 1}};
  prepare_case(c);
  const Outcome out = proof->verify(c);
  CHECK(out.metrics["max_abs"].get<double>() == 0.0);
  const auto& table = out.metrics["table"];
  CHECK(table["acmix"]["fc_params"]["measured"] == 3 * 4 * 9);
  CHECK(table["acmix"]["fc_params"]["paper"] == 3 * 4 * 9 * 4);
  CHECK(out.message.find("3N x k^2N") != std::string::npos);
  // 64 channels, k = 3: Stage I dominates the convolution and self-attention.
  CHECK(out.metrics["stage1_share"]["convolution"].get<double>() > 0.9);
  CHECK(out.metrics["stage1_share"]["self_attention"].get<double>() > 0.9);
  CHECK(out.metrics["stage1_dominates_from_in_channels"]["self_attention"] == 7);  // 3 C_in > 2 k^2 = 18
}
