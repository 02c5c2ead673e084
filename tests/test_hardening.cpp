// Inputs that must not crash, hang or destroy data, through the attnconv
// program: each refusal exits 2 with a message naming what is wrong and
// leaves an earlier report byte-identical.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <string>

#include "cli_support.hpp"
#include "harness/atomic_file.hpp"
#include "harness/quote.hpp"
#include "harness/signal_cleanup.hpp"

namespace {

using namespace attnconv::testing;
using json = nlohmann::json;

const json small_case = {{"name", "c1"},
                         {"proof", "cordonnier2020.theorem1"},
                         {"params",
                          {{"image", {6, 6}},
                           {"kernel", 3},
                           {"in_channels", 2},
                           {"out_channels", 3},
                           {"heads", 9},
                           {"head_dim", 3},
                           {"padding", 1}}}};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string sentinel = "{\"sentinel\": true}\n";

// Runs `run ARGS --out OUT` over a sentinel OUT/report.json: exit 2, every
// part of `expect` in the message, the sentinel untouched, no journal.
void check_refused(const fs::path& out, const std::string& args, const std::vector<std::string>& expect) {
  write_text(out / "report.json", sentinel);
  const CliResult result = run_cli("run " + args + " --out " + quoted(out));
  INFO("args: " << args.substr(0, 300) << "\noutput: " << result.output.substr(0, 2000));
  CHECK(result.code == 2);
  for (const auto& part : expect) CHECK(contains(result.output, part));
  CHECK(read_text(out / "report.json") == sentinel);
  CHECK_FALSE(fs::exists(out / "report.journal.jsonl"));
}

}  // namespace

TEST_CASE("quote: at most ~200 characters of any value, however deep", "[hardening]") {
  json deep = json::array();
  for (int k = 0; k < 100000; ++k) deep = json::array({std::move(deep)});
  const std::string quoted_deep = attnconv::quote(deep);
  CHECK(quoted_deep.size() <= attnconv::quote_limit + 3);
  CHECK(quoted_deep.rfind("[[[[", 0) == 0);
  CHECK(quoted_deep.substr(quoted_deep.size() - 3) == "...");
  CHECK(attnconv::quote(json::parse(R"({"a":[1,2.5,"x"],"b":null})")) == R"({"a":[1,2.5,"x"],"b":null})");
  CHECK(attnconv::quote(json(std::string(1000, 'y'))).size() == attnconv::quote_limit + 3);
  CHECK(attnconv::clip("\xC3\xA9\xC3\xA9", 3) == "\xC3\xA9...");  // not cut inside a UTF-8 character
}

TEST_CASE("a value nested 100000 levels deep is refused, in every part of a case", "[hardening]") {
  const ScratchDir dir("deep");
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string head = R"({"cases": [{"name": "c1", "proof": "cordonnier2020.theorem1", )";
  const std::string params = R"("image": 6, "kernel": 3, "in_channels": 2, "out_channels": 3, "heads": 9, "head_dim": 3)";
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"params.padding", head + "\"params\": {" + params + ", \"padding\": " + deep + "}}]}"},
      {"sweep.alpha", head + "\"params\": {" + params + "}, \"sweep\": {\"alpha\": " + deep + "}}]}"},
      {"tolerance.rel_l2", head + "\"params\": {" + params + "}, \"tolerance\": {\"rel_l2\": " + deep + "}}]}"},
      {"weights.input", head + "\"params\": {" + params + "}, \"weights\": {\"input\": " + deep + "}}]}"},
      {"expect", head + "\"params\": {" + params + "}, \"expect\": " + deep + "}]}"},
  };
  for (const auto& [key, text] : rows) {
    write_text(dir.path / "deep.json", text);
    check_refused(dir.path / "out", quoted(dir.path / "deep.json"),
                  {"deep.json", "case 'c1'", "key '" + key + "[0][0]", "nested deeper than 64"});
  }
  // 60 levels parse, and the message quotes at most ~200 characters of the value
  std::string sixty = "[" + std::string(59, '[') + "7" + std::string(59, ']') + "]";
  for (int k = 0; k < 500; ++k) sixty.insert(sixty.size() - 1, ",1");
  write_text(dir.path / "deep.json", head + "\"params\": {" + params + "}, \"expect\": " + sixty + "}]}");
  const CliResult result = run_cli("run " + quoted(dir.path / "deep.json") + " --out " + quoted(dir.path / "out"));
  CHECK(result.code == 2);
  CHECK(contains(result.output, "key 'expect': must be \"hold\" or \"fail\", got [[[["));
  CHECK(result.output.size() < 400);
  // and a number token of 100000 digits is quoted in part
  write_text(dir.path / "deep.json", head + "\"params\": {" + params + "}, \"expect\": [" + std::string(100000, '1') + "]}]}");
  const CliResult overflow = run_cli("run " + quoted(dir.path / "deep.json") + " --out " + quoted(dir.path / "out"));
  CHECK(overflow.code == 2);
  CHECK(contains(overflow.output, "number overflow parsing '111"));
  CHECK(overflow.output.size() < 400);
}

TEST_CASE("sizes: the expanded cases of all files are capped before expanding; --shard parsed strictly", "[hardening]") {
  const ScratchDir dir("sizes");
  json sweep_case = small_case;
  std::vector<int> seeds(60000);
  for (int k = 0; k < 60000; ++k) seeds[std::size_t(k)] = k;
  sweep_case["sweep"] = {{"seed", seeds}};
  sweep_case["name"] = "a";
  write_text(dir.path / "cases" / "a.json", json{{"cases", {sweep_case}}}.dump());
  sweep_case["name"] = "b";
  write_text(dir.path / "cases" / "b.json", json{{"cases", {sweep_case}}}.dump());
  // 60000 each: one file is fine (list), the two together are over the cap
  CHECK(run_cli("list " + quoted(dir.path / "cases" / "a.json") + " > /dev/null").code == 0);
  check_refused(dir.path / "out", quoted(dir.path / "cases"),
                {"b.json", "case 'b'", "key 'sweep'", "more than 100000 cases", "over all its case files"});
  // a product of sweep lengths that overflows 64 bits is counted, not multiplied
  json product = small_case;
  product["sweep"] = json::object();
  for (const char* key : {"seed", "alpha", "heads", "head_dim", "in_channels"}) product["sweep"][key] = std::vector<int>(20000, 1);
  write_text(dir.path / "product.json", json{{"cases", {product}}}.dump());
  check_refused(dir.path / "out", quoted(dir.path / "product.json"), {"product.json", "case 'c1'", "more than 100000 cases"});

  write_text(dir.path / "small.json", json{{"cases", {small_case}}}.dump());
  for (const std::string shard : {"1/99999999999", "99999999999/99999999999", "1/2x", "+1/2", " 1/2", "1/", "0/3", "2/-3", "3/2"})
    check_refused(dir.path / "out", quoted(dir.path / "small.json") + " --shard '" + shard + "'",
                  {"--shard: expected I/N with 1 <= I <= N <= 2147483647", "got '" + shard + "'"});
}

TEST_CASE("--filter matches a literal case name with brackets; no match says how to escape", "[hardening]") {
  const ScratchDir dir("filter");
  json sweep_case = small_case;
  sweep_case["sweep"] = {{"alpha", {8, 16}}};
  write_text(dir.path / "sweep.json", json{{"cases", {sweep_case}}}.dump());
  const CliResult literal = run_cli("list " + quoted(dir.path / "sweep.json") + " --filter 'c1[alpha=8]'");
  CHECK(literal.code == 0);
  CHECK(literal.output.rfind("c1[alpha=8]\t", 0) == 0);
  CHECK(std::count(literal.output.begin(), literal.output.end(), '\n') == 1);
  const CliResult escaped = run_cli("list " + quoted(dir.path / "sweep.json") + " --filter 'c1[[]alpha=*]'");
  CHECK(std::count(escaped.output.begin(), escaped.output.end(), '\n') == 2);
  check_refused(dir.path / "out", quoted(dir.path / "sweep.json") + " --filter 'c1[alpha=*]'",
                {"no case matches --filter 'c1[alpha=*]'", "write '[[]' for a literal '['", "--filter 'c1[[]alpha=*]'"});
}

namespace {

std::vector<fs::path> temporary_files(const fs::path& dir) {
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().find(".tmp.") != std::string::npos) found.push_back(entry.path());
  return found;
}

}  // namespace

TEST_CASE("a signal removes the temporary file of an atomic write and ends the process by that signal", "[hardening]") {
  const ScratchDir dir("signal_cleanup");
  // A registered file is removed by SIGTERM, the process dies by SIGTERM.
  const fs::path registered = dir.path / "registered";
  const pid_t child = fork();
  if (child == 0) {
    attnconv::install_signal_cleanup();
    const attnconv::RemoveOnSignal remove(registered.string());
    std::ofstream(registered) << "x";
    ::raise(SIGTERM);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM));
  CHECK_FALSE(fs::exists(registered));

  // SIGINT while write_file_atomic writes 256 MB: no report.json.tmp.* stays
  // behind, and report.json is the earlier one or the complete new one.
  const fs::path report = dir.path / "report.json";
  write_text(report, sentinel);
  const std::size_t size = std::size_t(256) << 20;
  const pid_t writer = fork();
  if (writer == 0) {
    attnconv::install_signal_cleanup();
    attnconv::write_file_atomic(report.string(), std::string(size, 'r'));
    _exit(0);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (temporary_files(dir.path).empty() && std::chrono::steady_clock::now() < deadline && waitpid(writer, &status, WNOHANG) == 0)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  const bool seen = !temporary_files(dir.path).empty();
  ::kill(writer, SIGINT);
  waitpid(writer, &status, 0);
  CHECK(seen);
  CHECK(temporary_files(dir.path).empty());
  if (WIFSIGNALED(status)) {
    CHECK(WTERMSIG(status) == SIGINT);
    CHECK(read_text(report) == sentinel);
  } else {
    CHECK(fs::file_size(report) == size);  // finished before the signal
  }
}
