// hassani2023.neighborhood_attention with NATTEN's current parameters and at a
// small alpha (cases/neighborhood_natten_current.json, cases/neighborhood_small_alpha.json):
// every case passes with the findings docs/local_attention.md states.
#include <catch2/catch.hpp>

#include "cases/case_loader.hpp"
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
    result["name"] = c.name;
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace

TEST_CASE("NATTEN's current parameters: blocked attention, causal and even taps, what a stride keeps",
          "[natten_proofs]") {
  const auto results = run_file("neighborhood_natten_current.json");
  REQUIRE(results.size() >= 10);
  int blocked = 0, partial = 0;
  for (const json& r : results) {
    INFO(r["name"] << ": " << r["message"]);
    const json& m = r["metrics"];
    CHECK(r["verdict"] == "holds");
    if (m.contains("blocked_max_abs")) {
      ++blocked;
      CHECK(m["blocked_max_abs"].get<double>() <= m["blocked_allowance"].get<double>());
      if (!m["blocked_partial_max_abs"].is_null()) {
        ++partial;
        CHECK(m["blocked_partial_max_abs"].get<double>() > 1e6 * m["blocked_allowance"].get<double>());
      }
    }
    if (m["band_visible"].get<bool>()) CHECK(m["band_sides"] == m["band_sides_expected"]);
    if (m["expressed_fraction_predicted"].get<double>() < 1)
      CHECK(m["unexpressed_min_abs"].get<double>() > 1e6 * m["bound"].get<double>());  // the missing taps show
  }
  CHECK(blocked >= 3);
  CHECK(partial >= 1);
}

TEST_CASE("small alpha: the bound holds, the band is not judged, and the clamped window shows", "[natten_proofs]") {
  const auto results = run_file("neighborhood_small_alpha.json");
  REQUIRE(results.size() >= 4);
  for (const json& r : results) {
    INFO(r["name"] << ": " << r["message"]);
    const json& m = r["metrics"];
    CHECK(r["verdict"] == "bound holds");
    CHECK(m["alpha"].get<double>() <= 4);
    CHECK_FALSE(m["band_visible"].get<bool>());
    CHECK_THAT(r["message"].get<std::string>(), Catch::Contains("cannot be told from the interior"));
    CHECK(m["versus_truncated_max_abs"].get<double>() > 1e-3);
  }
}
