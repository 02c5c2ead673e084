// End to end through the program: the converse cases are confirmed as
// predicted failures with eckart_young, and the alpha sweep stays under its
// bound with a fitted slope close to -1.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"

using namespace attnconv::testing;

namespace {
// Runs one file of cases/ into a scratch folder (removed afterwards) and
// returns its report.
nlohmann::json run_cases(const std::string& cases, const std::string& label) {
  const ScratchDir out(label);
  const auto result = run_cli("run " + quoted(fs::path(ATTNCONV_SOURCE_DIR) / "cases" / cases) + " --out " + quoted(out.path));
  INFO(result.output);
  REQUIRE(result.code == 0);
  return nlohmann::json::parse(read_text(out.path / "report.json"));
}
}  // namespace

TEST_CASE("the converse: predicted failures, the rank-limited ones at the Eckart-Young distance", "[theorem1_cli]") {
  const auto report = run_cases("theorem1_converse.json", "theorem1_converse");
  int rank_limited = 0;
  for (const auto& c : report["cases"]) {
    INFO(c["name"]);
    CHECK(c["status"] == "pass");
    CHECK(c["expect"] == "fail");
    CHECK(c["verdict"] == "fails as predicted");
    CHECK(c["message"].get<std::string>().rfind("fails as predicted: ", 0) == 0);
    const auto& m = c["metrics"];
    // The measured failure is at least its predicted floor (Eckart-Young, or
    // any positive distance with too few heads), and the message says so.
    CHECK(m["weight_distance"].get<double>() > 0);
    CHECK(m["weight_distance"].get<double>() >= m["failure_floor"].get<double>() * (1 - 1e-12));
    CHECK(c["message"].get<std::string>().find("the predicted floor") != std::string::npos);
    CHECK(m["max_abs"].get<double>() > m["bound"].get<double>());
    const bool all_positions = c["message"].get<std::string>().find("positions without a head") == std::string::npos;
    if (m.contains("eckart_young") && all_positions) {
      // Every kernel position has a head: the whole weight error is the
      // truncated SVD's, which is the best possible (Eckart-Young).
      ++rank_limited;
      CHECK(m["weight_distance"].get<double>() == Approx(m["eckart_young"].get<double>()).epsilon(1e-10));
    }
  }
  CHECK(rank_limited >= 3);
}

TEST_CASE("the alpha sweep stays under its bound and decays with slope close to -1", "[theorem1_cli]") {
  const auto report = run_cases("theorem1_alpha_sweep.json", "theorem1_sweep");
  for (const auto& c : report["cases"]) {
    INFO(c["name"]);
    CHECK(c["metrics"]["max_abs"].get<double>() <= c["metrics"]["bound"].get<double>());
  }
  REQUIRE(report["sweep_fits"].size() == 4);
  for (const auto& fit : report["sweep_fits"]) {
    INFO(fit.dump());
    CHECK(fit["points_used"].get<int>() >= 5);
    CHECK(fit["slope"].get<double>() < -0.9);
    CHECK(fit["slope"].get<double>() > -1.1);
  }
}

TEST_CASE("the general, 1D and padding-remark case files pass, within their bounds", "[theorem1_cli]") {
  for (const std::string file : {"theorem1_general.json", "theorem1_1d.json"}) {
    const auto report = run_cases(file, "theorem1_files");
    for (const auto& c : report["cases"]) {
      INFO(c["name"]);
      CHECK(c["status"] == "pass");
      CHECK(c["metrics"]["max_abs"].get<double>() <= c["metrics"]["bound"].get<double>());
    }
  }
  const auto report = run_cases("padding_remark.json", "padding_remark");
  for (const auto& c : report["cases"]) {
    INFO(c["name"]);
    const auto& m = c["metrics"];
    CHECK(c["status"] == "pass");
    CHECK(m["band_sides"] == m["band_sides_expected"]);
    CHECK(m["band_exceptions"] == 0);
    CHECK(m["max_abs"].get<double>() > 1e-3);  // the band is there: the outputs really differ
    CHECK(m["interior_max_abs"].get<double>() <= m["bound"].get<double>());
    CHECK(m["padded_max_abs"].get<double>() <= m["padded_bound"].get<double>());
  }
}
