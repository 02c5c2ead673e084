// Same case file => bit-identical metrics, across runs and --jobs values
// (each case runs in its own process; with --jobs > 1 OpenBLAS runs 1 thread).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"

namespace {

using namespace attnconv::testing;
using json = nlohmann::json;

// Every case entry without its timing.
json without_timings(const json& report) {
  json cases = report.at("cases");
  for (auto& c : cases) c.erase("seconds");
  return cases;
}

json run_report(const fs::path& out, const std::string& args) {
  const CliResult result = run_cli("run " + args + " --out " + quoted(out));
  INFO(result.output);
  REQUIRE(result.code == 0);
  return json::parse(read_text(out / "report.json"));
}

}  // namespace

TEST_CASE("metrics are bit-identical across runs and --jobs values", "[reproducible]") {
  const ScratchDir dir("reproducible");
  const fs::path file = dir.path / "cases.json";
  // Small cases of every kind plus one large enough for multi-threaded BLAS.
  const json cases = {
      {"cases",
       {{{"name", "sweep"},
         {"proof", "cordonnier2020.theorem1"},
         {"params", {{"image", {7, 9}}, {"kernel", 3}, {"in_channels", 3}, {"out_channels", 4}, {"heads", 9}, {"head_dim", 4}, {"padding", 1}}},
         {"sweep", {{"alpha", {2, 8, 60}}, {"dtype", {"float32", "float64"}}, {"seed", {1, 2}}}},
         {"tolerance", {{"rel_l2", 1.0}}}},
        {{"name", "big"},
         {"proof", "cordonnier2020.theorem1"},
         {"params", {{"image", {24, 24}}, {"kernel", 3}, {"in_channels", 16}, {"out_channels", 16}, {"heads", 9}, {"head_dim", 16}, {"padding", "same"}}}},
        {{"name", "rank-limited"},
         {"proof", "cordonnier2020.theorem1"},
         {"expect", "fail"},
         {"params", {{"image", {8, 8}}, {"kernel", 3}, {"in_channels", 4}, {"out_channels", 6}, {"heads", 9}, {"head_dim", 3}, {"padding", 1}}}}}}};
  write_text(file, cases.dump(2));
  const std::string paths = quoted(file);

  const json serial = run_report(dir.path / "j1", paths + " --jobs 1");
  const json again = run_report(dir.path / "j1b", paths + " --jobs 1");
  const json parallel = run_report(dir.path / "j2", paths + " --jobs 2");
  const json wide = run_report(dir.path / "j5", paths + " --jobs 5");
  REQUIRE(serial["cases"].size() == 12 + 2);
  CHECK(without_timings(again) == without_timings(serial));
  CHECK(without_timings(parallel) == without_timings(serial));
  CHECK(without_timings(wide) == without_timings(serial));
  CHECK(parallel["run"]["jobs"] == 2);
  // Some metric must be non-trivial, or equality proves nothing.
  CHECK(serial["cases"][0]["metrics"]["max_abs"].get<double>() > 0);
}
