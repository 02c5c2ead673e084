// Reports are written to a temporary file and renamed: never truncated in
// place, never half-written, no temporary left behind.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"

namespace {
using namespace attnconv::testing;
using json = nlohmann::json;
}  // namespace

TEST_CASE("a run replaces report.json by rename, leaving other links to the old file intact", "[report_atomic]") {
  const ScratchDir dir("report_atomic");
  const fs::path out = dir.path / "out";
  fs::create_directories(out);
  write_text(out / "old.json", "{\"old\": true}\n");
  fs::create_hard_link(out / "old.json", out / "report.json");  // writing in place would change old.json too
  const fs::path cases = fs::path(ATTNCONV_SOURCE_DIR) / "cases" / "theorem1_basic.json";
  const CliResult result = run_cli("run " + quoted(cases) + " --filter 't1-k3-*' --out " + quoted(out));
  INFO(result.output);
  REQUIRE(result.code == 0);
  CHECK(read_text(out / "old.json") == "{\"old\": true}\n");
  const json report = json::parse(read_text(out / "report.json"));
  CHECK(report["summary"]["passed"].get<int>() > 0);
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(out)) left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"old.json", "report.json"});  // no temporary file, no journal
}

TEST_CASE("an output folder that cannot be written is refused before anything runs", "[report_atomic]") {
  const ScratchDir dir("report_unwritable");
  write_text(dir.path / "file", "not a folder");
  const fs::path cases = fs::path(ATTNCONV_SOURCE_DIR) / "cases" / "theorem1_basic.json";
  const CliResult result = run_cli("run " + quoted(cases) + " --out " + quoted(dir.path / "file" / "out"));
  INFO(result.output);
  CHECK(result.code == 2);
  CHECK(result.output.find("file/out") != std::string::npos);
}
