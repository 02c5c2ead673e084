// The three local-attention proofs: registered, every case of their case files
// passes with the border findings docs/local_attention.md states, bad parameters are
// refused naming the key, and the dumps hold the bias tables.
#include <catch2/catch.hpp>
#include <filesystem>
#include <xtensor/xnpy.hpp>

#include "cli_support.hpp"
#include "cases/case_loader.hpp"
#include "io/errors.hpp"
#include "run/runner.hpp"

using namespace attnconv;

namespace {

std::vector<json> run_file(const std::string& name) {
  RunOptions options;
  std::vector<json> results;
  for (const auto& c : load_cases({std::string(ATTNCONV_SOURCE_DIR) + "/cases/" + name})) {
    json result = run_case(c, options);
    INFO(c.name << ": " << result["message"]);
    CHECK(result["status"] == "pass");
    result["params"] = c.params;
    results.push_back(std::move(result));
  }
  return results;
}

std::string error_of(const std::string& proof, const json& params) {
  try {
    expand_case({{"name", "bad"}, {"proof", proof}, {"params", params}}, "cases/x.json", 0);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the local-attention proofs are registered", "[local_proofs]") {
  for (const char* id : {"hassani2023.neighborhood_attention", "liu2021.swin_window_attention",
                         "acmix2022.window_vs_neighborhood"})
    CHECK(find_proof(id));
}

TEST_CASE("neighborhood attention: every case passes; the band is the kernel's reach; dilation 1 is global attention's "
          "border too", "[local_proofs]") {
  const auto results = run_file("neighborhood_attention.json");
  REQUIRE(results.size() >= 5);
  for (const json& r : results) {
    INFO(r["message"]);
    const json& m = r["metrics"];
    CHECK(m["band_sides"] == m["band_sides_expected"]);
    CHECK(m["global_band_sides"] == m["band_sides_expected"]);
    CHECK(m["band_max_abs"].get<double>() > 1e3 * m["unpadded_bound"].get<double>());  // a real band
    if (r["params"]["dilation"] == 1) CHECK(m["versus_global_max_abs"].get<double>() <= m["unpadded_bound"].get<double>());
  }
}

TEST_CASE("Swin: every case passes; W-MSA then SW-MSA leaves pixels expressed by neither", "[local_proofs]") {
  const auto results = run_file("swin_window_attention.json");
  REQUIRE(results.size() >= 4);
  for (const json& r : results) {
    INFO(r["message"]);
    const json& m = r["metrics"];
    CHECK(m["coverage_exceptions"] == 0);
    CHECK(m["expressed_fraction"] == m["expressed_fraction_predicted"]);
    CHECK(m["pixels_expressed_by_neither"].get<int>() > 0);
    CHECK(m["band_max_abs"].get<double>() > 1e3 * m["bound"].get<double>());
  }
}

TEST_CASE("ACmix's reflected windows against clamped ones: a band of k_att // 2", "[local_proofs]") {
  const auto results = run_file("acmix_window_vs_neighborhood.json");
  REQUIRE(results.size() >= 3);
  for (const json& r : results) {
    const json& m = r["metrics"];
    CHECK(m["band_sides"] == m["band_sides_expected"]);
    CHECK(m["band_max_abs"].get<double>() > 1e3 * m["allowance"].get<double>());
  }
}

TEST_CASE("bad local-attention parameters are errors naming the key", "[local_proofs]") {
  const json na = {{"image", {9, 9}}, {"kernel", 3}, {"in_channels", 1}, {"out_channels", 1}};
  CHECK(error_of("hassani2023.neighborhood_attention", na).empty());
  json p = na;
  p["kernel"] = 4, p["window"] = 3;  // even kernels are taken; the window must hold them
  CHECK_THAT(error_of("hassani2023.neighborhood_attention", p), Catch::Contains("params.window"));
  p = na, p["stride"] = 4;  // NATTEN: stride <= window
  CHECK_THAT(error_of("hassani2023.neighborhood_attention", p), Catch::Contains("params.stride"));
  p = na, p["causal"] = {true, 1};
  CHECK_THAT(error_of("hassani2023.neighborhood_attention", p), Catch::Contains("params.causal"));
  p = na, p["window"] = 2;
  CHECK_THAT(error_of("hassani2023.neighborhood_attention", p), Catch::Contains("params.window"));
  p = na, p["dilation"] = 4;
  CHECK_THAT(error_of("hassani2023.neighborhood_attention", p), Catch::Contains("params.image") && Catch::Contains("12"));
  const json swin = {{"image", {8, 8}}, {"kernel", 3}, {"window", 4}, {"in_channels", 1}, {"out_channels", 1}};
  CHECK(error_of("liu2021.swin_window_attention", swin).empty());
  p = swin, p["window"] = 2;
  CHECK_THAT(error_of("liu2021.swin_window_attention", p), Catch::Contains("params.window"));
  const json acmix = {{"image", {8, 8}}, {"in_channels", 4}, {"out_channels", 4}, {"heads", 2}, {"kernel_att", 3}};
  CHECK(error_of("acmix2022.window_vs_neighborhood", acmix).empty());
  p = acmix, p["stride"] = 2;
  CHECK_THAT(error_of("acmix2022.window_vs_neighborhood", p), Catch::Contains("params.stride"));
  p = acmix, p["kernel_att"] = 9;
  CHECK_THAT(error_of("acmix2022.window_vs_neighborhood", p), Catch::Contains("params.kernel_att"));
}

TEST_CASE("the local-attention dumps hold the bias tables", "[local_proofs]") {
  const attnconv::testing::ScratchDir scratch("local_dump");
  RunOptions options;
  options.dump_dir = (scratch.path / "dumps").string();
  const auto na = expand_case({{"name", "na"}, {"proof", "hassani2023.neighborhood_attention"},
                               {"params", {{"image", {7, 8}}, {"kernel", 3}, {"window", 5}, {"in_channels", 2}, {"out_channels", 2}}}},
                              "cases/x.json", 0);
  REQUIRE(run_case(na.at(0), options)["status"] == "pass");
  CHECK(xt::load_npy<double>(options.dump_dir + "/na/rpb.npy").shape() == std::vector<std::size_t>{9, 9, 9});
  CHECK(xt::load_npy<double>(options.dump_dir + "/na/actual_unpadded.npy").shape() == std::vector<std::size_t>{2, 7, 8});
  const auto swin = expand_case({{"name", "swin"}, {"proof", "liu2021.swin_window_attention"},
                                 {"params", {{"image", {6, 7}}, {"kernel", 3}, {"window", 4}, {"in_channels", 2}, {"out_channels", 2}}}},
                                "cases/x.json", 0);
  REQUIRE(run_case(swin.at(0), options)["status"] == "pass");
  CHECK(xt::load_npy<double>(options.dump_dir + "/swin/table.npy").shape() == std::vector<std::size_t>{49, 9});
  CHECK(xt::load_npy<double>(options.dump_dir + "/swin/actual_shifted.npy").shape() == std::vector<std::size_t>{2, 6, 7});
}
