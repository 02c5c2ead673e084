// Same case file => bit-identical metrics, across runs, --jobs values and
// --shard splits (each case runs in its own process; with --jobs > 1 OpenBLAS
// runs 1 thread).
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"

namespace {

using namespace attnconv::testing;
using json = nlohmann::json;

// Every case entry without its timing and measured peak memory.
json without_timings(const json& report) {
  json cases = report.at("cases");
  for (auto& c : cases) c.erase("seconds"), c.erase("peak_memory");
  return cases;
}

json run_report(const fs::path& out, const std::string& args) {
  const CliResult result = run_cli("run " + args + " --out " + quoted(out));
  INFO(result.output);
  REQUIRE(result.code == 0);
  return json::parse(read_text(out / "report.json"));
}

// Small cases of every kind plus one large enough for multi-threaded BLAS:
// 12 sweep points + 2 cases.
fs::path write_cases(const ScratchDir& dir) {
  const fs::path file = dir.path / "cases.json";
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
  return file;
}

// Case entries keyed by their name.
std::map<std::string, json> by_name(const json& cases) {
  std::map<std::string, json> out;
  for (const auto& c : cases) out.emplace(c.at("name").get<std::string>(), c);
  return out;
}

}  // namespace

TEST_CASE("metrics are bit-identical across runs and --jobs values", "[reproducible]") {
  const ScratchDir dir("reproducible");
  const std::string paths = quoted(write_cases(dir));

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

TEST_CASE("metrics are bit-identical across --shard splits", "[reproducible]") {
  const ScratchDir dir("reproducible-shard");
  const std::string paths = quoted(write_cases(dir));
  const auto whole = by_name(without_timings(run_report(dir.path / "whole", paths)));
  REQUIRE(whole.size() == 12 + 2);
  for (int count : {2, 3, 5}) {
    std::map<std::string, json> joined;
    for (int index = 1; index <= count; ++index) {
      const std::string shard = std::to_string(index) + "/" + std::to_string(count);
      const auto part = by_name(without_timings(run_report(dir.path / ("s" + std::to_string(count) + "-" + std::to_string(index)), paths + " --shard " + shard)));
      for (const auto& [name, entry] : part) CHECK(joined.emplace(name, entry).second);  // no case twice
    }
    INFO("--shard I/" << count);
    CHECK(joined == whole);
  }
}
