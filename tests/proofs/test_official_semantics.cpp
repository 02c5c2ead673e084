// The official semantics the local-attention and encoding proofs take (issue
// 25.3-25.5, 24.B8): Swin's rectangular windows, qkv_bias, small-image rule and
// the predicted coverage on images not a multiple of M; fairseq's two
// lightweight-convolution classes, causal padding and bias; ConViT's GPSA
// refusing non-square grids. Every case of cases/swin_official.json and
// cases/lightweight_conv_fairseq.json passes with the numbers the docs state.
#include <catch2/catch.hpp>
#include <filesystem>
#include <xtensor/xnpy.hpp>

#include "cli_support.hpp"
#include "cases/case_loader.hpp"
#include "io/errors.hpp"
#include "run/runner.hpp"

using namespace attnconv;

namespace {

std::map<std::string, json> run_file(const std::string& name) {
  RunOptions options;
  std::map<std::string, json> results;
  for (const auto& c : load_cases({std::string(ATTNCONV_SOURCE_DIR) + "/cases/" + name})) {
    json result = run_case(c, options);
    INFO(c.name << ": " << result["message"]);
    CHECK(result["status"] == "pass");
    results[c.name] = std::move(result);
  }
  return results;
}

std::string error_of(const json& c) {
  try {
    expand_case(c, "cases/x.json", 0);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string error_of(const std::string& proof, const json& params) {
  return error_of({{"name", "bad"}, {"proof", proof}, {"params", params}});
}

}  // namespace

TEST_CASE("Swin: rectangular windows, qkv_bias, the small-image rule and issue 24 B8's coverage",
          "[official_semantics]") {
  const auto r = run_file("swin_official.json");
  REQUIRE(r.size() == 7);
  // B8: M = 7, K = 5, [10, 16]: SW-MSA expresses 21 pixels, all of them predicted.
  const json& b8 = r.at("swin-m7-k5-10x16")["metrics"];
  CHECK(b8["coverage_exceptions"] == 0);
  CHECK(b8["shifted_expressed_fraction"].get<double>() * 160 == Approx(21));
  CHECK(b8["shifted_expressed_fraction_predicted"].get<double>() * 160 == Approx(21));
  // A rectangular window [4, 6]: shift [2, 3].
  const json& rect = r.at("swin-m4x6-k3")["metrics"];
  CHECK(rect["window_used"] == json::array({4, 6}));
  CHECK(rect["shift"] == json::array({2, 3}));
  CHECK(rect["coverage_exceptions"] == 0);
  // qkv_bias (the default): both checks hold to round-off; off: not measured.
  for (const char* name : {"swin-m7-k5-10x16", "swin-m4x6-k3", "swin-m3x5-k3-padded", "swin-m4x6-k3-float32"}) {
    const json& m = r.at(name)["metrics"];
    INFO(name);
    CHECK(m["qk_bias_max_abs"].get<double>() <= m["qk_bias_allowance"].get<double>());
    CHECK(m["v_bias_max_abs"].get<double>() <= m["v_bias_allowance"].get<double>());
    CHECK(m["v_bias_allowance"].get<double>() > 0);
  }
  CHECK_FALSE(r.at("swin-no-qkv-bias")["metrics"].contains("qk_bias_max_abs"));
  // The small-image rule on [4, 8] with M = 4: the detection repository shifts by 2,
  // the classification repository does not; their second blocks differ.
  const json& detection = r.at("swin-4x8-m4-detection")["metrics"];
  const json& classification = r.at("swin-4x8-m4-classification")["metrics"];
  CHECK(detection["shift"] == json::array({2, 2}));
  CHECK_FALSE(detection.contains("rule_difference"));
  CHECK(classification["shift"] == json::array({0, 0}));
  CHECK(classification["window_used"] == json::array({4, 4}));
  CHECK(classification["rule_difference"].get<double>() > 1);
  CHECK(classification["shifted_expressed_fraction"] == classification["expressed_fraction"]);
}

TEST_CASE("Swin refuses the old weights.table naming the new name, and the small-image rule's impossible inputs",
          "[official_semantics]") {
  const attnconv::testing::ScratchDir folder("official_table");
  const std::string file = (folder.path / "t.npy").string();
  xt::dump_npy(file, xt::xarray<double>(xt::zeros<double>({49, 9})));
  const json params = {{"image", {8, 8}}, {"kernel", 3}, {"window", 4}, {"in_channels", 1}, {"out_channels", 1}};
  const std::string old =
      error_of({{"name", "old"}, {"proof", "liu2021.swin_window_attention"}, {"params", params}, {"weights", {{"table", file}}}});
  CHECK_THAT(old, Catch::Contains("case 'old'") && Catch::Contains("weights.table") &&
                      Catch::Contains("weights.random_table"));
  json p = params;
  p["window"] = {4, 5}, p["small_image"] = "window_is_image";
  CHECK_THAT(error_of("liu2021.swin_window_attention", p), Catch::Contains("params.small_image"));
  p = params, p["image"] = {6, 8}, p["small_image"] = "window_is_image", p["window"] = 7;
  CHECK_THAT(error_of("liu2021.swin_window_attention", p), Catch::Contains("params.image"));
  p = params, p["window"] = {4, 2};
  CHECK_THAT(error_of("liu2021.swin_window_attention", p), Catch::Contains("params.window"));
}

TEST_CASE("fairseq: both lightweight-convolution classes, causal padding and bias", "[official_semantics]") {
  const auto r = run_file("lightweight_conv_fairseq.json");
  REQUIRE(r.size() == 9);
  for (const auto& [name, result] : r) {
    const json& m = result["metrics"];
    INFO(name);
    if (m.contains("class_difference")) CHECK(m["class_difference"].get<double>() > 0.1);  // every case has heads > 1
  }
  const json& interleaved = r.at("lwc-conv1d-interleaved[radius=1]")["metrics"];
  CHECK(interleaved["class"] == "LightweightConv1d");
  const json& causal = r.at("lwc-tbc-causal[radius=3]")["metrics"];
  CHECK(causal["padding_l"] == 6);
  CHECK(causal["end_band_tokens"] == 6);
  CHECK(causal["max_abs"].get<double>() <= causal["roundoff_allowance"].get<double>());
  CHECK(causal["end_band_max_abs"].get<double>() > 0.01);
  const json base = {{"length", 12}, {"channels", 4}, {"heads", 2}, {"radius", 1}};
  json p = base;
  p["class"] = "LightweightConv1d", p["padding"] = "causal";
  CHECK_THAT(error_of("chang2021.relative_position_lightweight_conv", p),
             Catch::Contains("params.padding") && Catch::Contains("LightweightConv1dTBC"));
  p = base, p["class"] = "LightweightConv1dTBC1";
  CHECK_THAT(error_of("chang2021.relative_position_lightweight_conv", p), Catch::Contains("params.class"));
}

TEST_CASE("ConViT's GPSA refuses a non-square grid: no official counterpart", "[official_semantics]") {
  const json square = {{"image", {6, 6}}, {"heads", 4}, {"head_dim", 2}, {"locality_strength", 60}, {"gating", 40}};
  CHECK(error_of("dascoli2021.convit_gpsa", square).empty());
  for (const json& image : {json::array({6, 8}), json::array({7, 6})}) {
    json p = square;
    p["image"] = image;
    const std::string error = error_of("dascoli2021.convit_gpsa", p);
    INFO(image);
    CHECK_THAT(error, Catch::Contains("params.image") && Catch::Contains("no official counterpart"));
  }
}
