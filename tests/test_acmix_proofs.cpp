// The four ACmix proofs: registered, every case in cases/acmix_*.json passes,
// bad parameters are rejected naming the key.
#include <catch2/catch.hpp>
#include <filesystem>

#include "harness/case_loader.hpp"
#include "harness/errors.hpp"
#include "harness/runner.hpp"

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
