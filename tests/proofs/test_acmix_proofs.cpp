// The four ACmix proofs: registered, every case in cases/acmix_*.json passes,
// bad parameters are rejected naming the key.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <xtensor/xnpy.hpp>

#include "cli_support.hpp"
#include "cases/case_loader.hpp"
#include "io/errors.hpp"
#include "proof/memory.hpp"
#include "run/resources.hpp"
#include "run/runner.hpp"

using namespace attnconv;

TEST_CASE("the four ACmix proofs are registered", "[acmix_proofs]") {
  for (const char* id : {"acmix2022.conv_decomposition", "acmix2022.shift_as_depthwise", "acmix2022.module",
                         "acmix2022.cost_table"})
    CHECK(find_proof(id));
}

TEST_CASE("every ACmix case passes", "[acmix_proofs]") {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(ATTNCONV_SOURCE_DIR) + "/cases"))
    if (entry.path().filename().string().rfind("acmix_", 0) == 0) files.push_back(entry.path().string());
  REQUIRE(files.size() >= 4);
  RunOptions options;
  for (const auto& c : load_cases(files)) {
    const json result = run_case(c, options);
    INFO(c.name << ": " << result["message"]);
    CHECK(result["status"] == "pass");
  }
}

namespace {
std::string error_of(const json& params, const json& weights = json::object()) {
  json object = {{"name", "bad"}, {"proof", "acmix2022.module"}, {"params", params}};
  if (!weights.empty()) object["weights"] = weights;
  try {
    expand_case(object, "cases/x.json", 0);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("bad ACmix parameters are errors naming the key", "[acmix_proofs]") {
  const json base = {{"image", {8, 8}}, {"in_channels", 4}, {"out_channels", 6}, {"heads", 2}};
  CHECK(error_of(base).empty());
  json p = base;
  p["heads"] = 4;
  CHECK_THAT(error_of(p), Catch::Contains("params.out_channels") && Catch::Contains("not divisible by heads 4"));
  p = base, p["kernel_conv"] = 4;
  CHECK_THAT(error_of(p), Catch::Contains("params.kernel_conv") && Catch::Contains("odd"));
  p = base, p["kernel_att"] = 17;
  CHECK_THAT(error_of(p), Catch::Contains("params.kernel_att"));
  p = base, p["rates"] = {1};
  CHECK_THAT(error_of(p), Catch::Contains("params.rates"));
  CHECK_THAT(error_of(base, {{"conv9.weight", "w.npy"}}), Catch::Contains("weights.conv9.weight") && Catch::Contains("conv1.weight"));
  p = base, p["projection_bias"] = false;
  CHECK_THAT(error_of(p, {{"conv2.bias", "b.npy"}}), Catch::Contains("params.projection_bias"));
}

TEST_CASE("acmix2022.module dumps the paths, the derived kernel of [x; 1] and every parameter under its state_dict name", "[acmix_proofs]") {
  const auto cases = expand_case({{"name", "dump-check"},
                                  {"proof", "acmix2022.module"},
                                  {"params", {{"image", {7, 9}}, {"in_channels", 4}, {"out_channels", 6}, {"heads", 2},
                                              {"kernel_att", 3}, {"kernel_conv", 5}, {"stride", 2}}}},
                                 "cases/x.json", 0);
  const attnconv::testing::ScratchDir scratch("acmix_dump");
  RunOptions options;
  options.dump_dir = (scratch.path / "dumps").string();
  REQUIRE(run_case(cases.at(0), options)["status"] == "pass");
  const std::string dir = options.dump_dir + "/dump-check/";
  const std::map<std::string, std::vector<std::size_t>> want{
      {"input", {4, 7, 9}},           {"expected", {6, 4, 5}},         {"actual", {6, 4, 5}},
      {"attention_out", {6, 4, 5}},   {"conv_out", {6, 4, 5}},         {"output", {6, 4, 5}},
      {"rate1", {1}},                 {"rate2", {1}},                  {"conv1.weight", {6, 4, 1, 1}},
      {"conv1.bias", {6}},            {"conv2.weight", {6, 4, 1, 1}},  {"conv3.bias", {6}},
      {"conv_p.weight", {3, 2, 1, 1}}, {"conv_p.bias", {3}},           {"fc.weight", {25, 6, 1, 1}},
      {"dep_conv.weight", {6, 25, 5, 5}}, {"conv_weight", {6, 5, 5, 5}}, {"conv_bias", {6}}};
  for (const auto& [name, shape] : want) {
    INFO(name);
    const auto array = xt::load_npy<double>(dir + name + ".npy");
    CHECK(std::vector<std::size_t>(array.shape().begin(), array.shape().end()) == shape);
  }
  CHECK_FALSE(std::filesystem::exists(dir + "dep_conv.bias.npy"));  // the reference has none
}

TEST_CASE("a decomposition case's memory estimate is linear in the pixels (a 224x224 layer fits)", "[acmix_proofs]") {
  const auto estimate = [](int side) {
    const json object = {{"name", "big"},
                         {"proof", "acmix2022.conv_decomposition"},
                         {"params", {{"image", {side, side}}, {"kernel", 3}, {"in_channels", 32}, {"out_channels", 32}, {"padding", 1}}}};
    return case_memory_estimate(expand_case(object, "cases/x.json", 0).at(0));
  };
  const double small = estimate(224), large = estimate(448);
  // 3 C_in + 2 C_out padded planes and 6 C_out output planes of 8 bytes: ~130 MiB above process_bytes at 224^2.
  CHECK(small < 256.0 * 1024 * 1024);
  CHECK(large - process_bytes < 4.1 * (small - process_bytes));
  CHECK(large - process_bytes > 3.9 * (small - process_bytes));
}
