// Inputs that must not crash, hang or destroy data, through the attnconv
// program: each refusal exits 2 with a message naming what is wrong and
// leaves an earlier report byte-identical.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "cli_support.hpp"
#include "run/atomic_file.hpp"
#include "run/output_lock.hpp"
#include "io/quote.hpp"
#include "run/signal_cleanup.hpp"

namespace {

using namespace attnconv::testing;
using json = nlohmann::json;

const json small_case = small_theorem1_case();

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string sentinel = "{\"sentinel\": true}\n";

// The text of each file, or "<none>".
std::vector<std::string> snapshot(const std::vector<fs::path>& files) {
  std::vector<std::string> texts;
  for (const auto& file : files) texts.push_back(fs::is_regular_file(file) ? read_text(file) : "<none>");
  return texts;
}

// `attnconv ARGS` exits 2 with every part of `expect`, and leaves `unchanged` as they were.
void check_refused_cli(const std::string& args, const std::vector<std::string>& expect, const std::vector<fs::path>& unchanged) {
  const auto before = snapshot(unchanged);
  const CliResult result = run_cli(args);
  INFO("args: " << args << "\noutput: " << result.output);
  CHECK(result.code == 2);
  for (const auto& part : expect) CHECK(contains(result.output, part));
  CHECK(snapshot(unchanged) == before);
}

// `run ARGS --out OUT` over a sentinel OUT/report.json: refused, the sentinel untouched, no journal.
void check_refused(const fs::path& out, const std::string& args, const std::vector<std::string>& expect) {
  write_text(out / "report.json", sentinel);
  check_refused_cli("run " + args + " --out " + quoted(out), expect, {out / "report.json", out / "report.journal.jsonl"});
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
  CHECK(attnconv::clip(std::string("a\0b\n\x1b[2J\x7f", 9)) == "a\\u0000b\\u000a\\u001b[2J\\u007f");  // no control character reaches a terminal
  // Bytes that are not UTF-8 written as \xFF, so that a message is valid UTF-8 (RFC 3629: overlong
  // forms, surrogates, a cut or stray sequence are not); valid characters of 2 to 4 bytes pass.
  CHECK(attnconv::clip("a\xff" "b\xC0\xAF" "c\xED\xA0\x80" "d\xE2\x82" "e\x80" "f\xF4\x90\x80\x80") ==
        "a\\xFFb\\xC0\\xAFc\\xED\\xA0\\x80d\\xE2\\x82e\\x80f\\xF4\\x90\\x80\\x80");
  CHECK(attnconv::clip("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80") == "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  CHECK(attnconv::clip(std::string(300, '\xff')).size() <= attnconv::quote_limit + 3);  // the escapes count
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

  // a report nested 100000 levels deep, given to merge and plot
  write_text(dir.path / "deep_report.json", "{\"cases\": [{\"metrics\": " + deep + "}]}");
  for (const std::string command : {"merge", "plot"}) {
    const CliResult report = run_cli(command + " " + quoted(dir.path / "deep_report.json") + " --out " + quoted(dir.path / "m"));
    INFO(report.output);
    CHECK(report.code == 2);
    CHECK(contains(report.output, "deep_report.json"));
    CHECK(contains(report.output, "nested deeper than 64 arrays or objects"));
  }
  CHECK_FALSE(fs::exists(dir.path / "m"));
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

TEST_CASE("--filter and --shard read only the tensors of the cases they keep; every case's keys are still checked",
          "[hardening]") {
  const ScratchDir dir("selection");
  json bad = small_case;  // sorted first: shard 1/2 of {"bad", "c1"}
  bad["name"] = "bad", bad["weights"] = {{"input", "x.npy"}};
  write_text(dir.path / "x.npy", "not an .npy file");
  write_text(dir.path / "cases.json", json{{"cases", {small_case, bad}}}.dump());
  const std::string cases = quoted(dir.path / "cases.json");
  check_refused(dir.path / "out", cases, {"case 'bad'", "key 'weights.input'", "x.npy"});
  check_refused(dir.path / "out", cases + " --shard 1/2", {"case 'bad'", "key 'weights.input'"});
  const fs::path filtered = dir.path / "filtered", shard = dir.path / "shard";
  CHECK(run_cli("run " + cases + " --quiet --filter c1 --out " + quoted(filtered)).code == 0);
  CHECK(run_cli("run " + cases + " --quiet --shard 2/2 --out " + quoted(shard)).code == 0);
  const json report = json::parse(read_text(shard / "report.json"));
  CHECK(report["cases"].size() == 1);
  CHECK(report["shard"]["all_cases"] == json::array({"c1", "bad"}));  // every name, though one case's tensor is unreadable
  // A case left out still has its keys and parameters checked.
  json worse = small_case;
  worse["name"] = "worse", worse["params"]["kernel"] = "three";
  write_text(dir.path / "worse.json", json{{"cases", {small_case, worse}}}.dump());
  check_refused(dir.path / "out", quoted(dir.path / "worse.json") + " --filter c1", {"case 'worse'", "key 'params.kernel'"});
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

namespace {

json sweep_of_two() {
  json c = small_case;
  c["sweep"] = {{"alpha", {8, 16}}};
  return c;
}

}  // namespace

TEST_CASE("no command overwrites its own input or output (canonical paths), refused before running", "[hardening]") {
  const ScratchDir dir("collisions");
  const fs::path cases = dir.path / "small.json", out = dir.path / "out", report = out / "report.json";
  write_text(cases, json{{"cases", {sweep_of_two()}}}.dump());
  write_text(report, sentinel);
  const std::vector<fs::path> kept{cases, report, out / "report.journal.jsonl", out / "report.lock"};
  const std::string run = "run " + quoted(cases) + " --out " + quoted(out) + " ";
  check_refused_cli(run + "--junit " + quoted(report), {"--junit", "is the report", "never overwrites"}, kept);
  check_refused_cli(run + "--junit " + quoted(dir.path / "out" / ".." / "out" / "." / "report.json"), {"is the report"}, kept);
  check_refused_cli(run + "--junit " + quoted(cases), {"--junit", "is case file", "small.json"}, kept);
  fs::create_symlink(report, dir.path / "link.xml");
  check_refused_cli(run + "--junit " + quoted(dir.path / "link.xml"), {"--junit", "link.xml is the report"}, kept);
  check_refused_cli(run + "--junit " + quoted(out / "report.journal.jsonl"), {"--junit", "is the journal"}, kept);
  check_refused_cli(run + "--dump-tensors " + quoted(dir.path / "dump") + " --junit " + quoted(dir.path / "dump" / "c1[alpha=8]" / "input.npy"),
                    {"--junit", "inside the --dump-tensors folder of case 'c1[alpha=8]'"}, kept);
  check_refused_cli(run + "--junit " + quoted(out), {"--junit", "cannot be written: it is a folder"}, kept);
  check_refused_cli("run " + quoted(cases) + " --out " + quoted(dir.path / "new") + " --junit " + quoted(dir.path / "new"),
                    {"--junit", "is --out", "a folder this command makes"}, kept);
  CHECK_FALSE(fs::exists(dir.path / "new"));
  check_refused_cli(run + "--dump-tensors " + quoted(dir.path / "d") + " --junit " + quoted(dir.path / "d"),
                    {"--junit", "is --dump-tensors", "a folder this command makes"}, kept);
  check_refused_cli("plot " + quoted(report) + " --out " + quoted(cases), {"--out", "small.json is not a folder"}, kept);
  // A folder where no file can be made although access(2) allows it (tests run as root): /proc.
  check_refused_cli(run + "--junit /proc/attnconv-test.xml", {"--junit /proc/attnconv-test.xml cannot be written", "cannot write in /proc"}, kept);
  check_refused_cli("run " + quoted(cases) + " --out /proc/attnconv-test", {"/proc/attnconv-test/report.json cannot be written"}, kept);
  check_refused_cli("plot " + quoted(report) + " --out /proc/attnconv-test", {"--out /proc/attnconv-test cannot be written"}, kept);
  CHECK(std::distance(fs::directory_iterator(out), fs::directory_iterator()) == 1);  // no probe file left in a folder that can be written
  // --out a symbolic link to a missing folder, or to itself
  fs::create_symlink(dir.path / "missing" / "folder", dir.path / "dangling");
  fs::create_symlink(dir.path / "loop", dir.path / "loop");
  for (const char* link : {"dangling", "loop"})
    check_refused_cli("run " + quoted(cases) + " --out " + quoted(dir.path / link),
                      {"the report", std::string(link) + " is a symbolic link to a missing folder (or a loop of links)"}, kept);
  check_refused_cli("run " + quoted(cases) + " --out " + quoted(out) + " --junit " + quoted(dir.path / "dangling" / "j.xml"),
                    {"--junit", "dangling is a symbolic link to a missing folder"}, kept);
  // --out inside a case folder: the next run of the folder would read the report as a case file
  write_text(dir.path / "folder" / "small.json", read_text(cases));
  check_refused_cli("run " + quoted(dir.path / "folder") + " --out " + quoted(dir.path / "folder" / "." / "sub"),
                    {"the report", "is inside case folder", "choose another --out"}, kept);
  CHECK_FALSE(fs::exists(dir.path / "folder" / "sub"));
  // the out folder's report is a case's dump folder
  json named_report = small_case;
  named_report["name"] = "report.json";
  write_text(dir.path / "named.json", json{{"cases", {named_report}}}.dump());
  check_refused_cli("run " + quoted(dir.path / "named.json") + " --out " + quoted(out) + " --dump-tensors " + quoted(out),
                    {"the report", "inside the --dump-tensors folder of case 'report.json'"}, kept);
  // a case name too long for a dump folder
  json long_name = small_case;
  long_name["name"] = std::string(300, 'n');
  write_text(dir.path / "long.json", json{{"cases", {long_name}}}.dump());
  check_refused_cli("run " + quoted(dir.path / "long.json") + " --out " + quoted(out) + " --dump-tensors " + quoted(dir.path / "dump"),
                    {"--dump-tensors folder of case 'nnn", "cannot be written", "longer than 255 bytes"}, kept);
  // a weights file inside the folder its case dumps into
  json weighted = small_case;
  weighted["weights"] = {{"input", "dump/c1/input.npy"}};
  write_npy(dir.path / "dump" / "c1" / "input.npy", "<f8", {2, 6, 6}, raw_bytes(std::vector<double>(72, 0.5)));
  write_text(dir.path / "weighted.json", json{{"cases", {weighted}}}.dump());
  check_refused_cli("run " + quoted(dir.path / "weighted.json") + " --out " + quoted(out) + " --dump-tensors " + quoted(dir.path / "dump"),
                    {"weights.input of case 'c1'", "inside the --dump-tensors folder of case 'c1'"},
                    {report, dir.path / "dump" / "c1" / "input.npy"});

  // merge: --out or --junit naming one of its shard reports
  const fs::path shard1 = dir.path / "s1" / "report.json", shard2 = dir.path / "s2" / "report.json";
  REQUIRE(run_cli("run " + quoted(cases) + " --quiet --shard 1/2 --out " + quoted(shard1.parent_path())).code == 0);
  REQUIRE(run_cli("run " + quoted(cases) + " --quiet --shard 2/2 --out " + quoted(shard2.parent_path())).code == 0);
  const std::string merge = "merge " + quoted(shard1) + " " + quoted(shard2);
  check_refused_cli(merge + " --out " + quoted(shard1.parent_path()), {"the merged report", "is the shard report"}, {shard1, shard2});
  check_refused_cli(merge + " --out " + quoted(dir.path / "m") + " --junit " + quoted(shard2), {"--junit", "is the shard report"},
                    {shard1, shard2});
  check_refused_cli(merge + " --out " + quoted(dir.path / "m") + " --junit " + quoted(dir.path / "m" / "report.json"),
                    {"--junit", "is the merged report"}, {shard1, shard2});
  CHECK_FALSE(fs::exists(dir.path / "m"));
}

TEST_CASE("a lock on --out: a live run's folder is refused naming its pid; a stale lock is taken over", "[hardening]") {
  const ScratchDir dir("lock");
  const fs::path cases = dir.path / "small.json", out = dir.path / "out";
  write_text(cases, json{{"cases", {small_case}}}.dump());
  {
    std::ostringstream notes;
    const auto lock = attnconv::OutputLock::acquire(out.string(), notes);  // this process is the live run
    check_refused(out, quoted(cases), {"another attnconv (pid " + std::to_string(::getpid()) + ")", "report.lock"});
    CHECK(notes.str().empty());
  }
  CHECK_FALSE(fs::exists(out / "report.lock"));  // released
  write_text(out / "report.lock", "999999\n");   // left by a process that died (no flock held)
  const CliResult taken = run_cli("run " + quoted(cases) + " --quiet --out " + quoted(out));
  INFO(taken.output);
  CHECK(taken.code == 0);
  CHECK(contains(taken.output, "taking over the lock"));
  CHECK(contains(taken.output, "left by pid 999999"));
  CHECK(json::parse(read_text(out / "report.json"))["summary"]["passed"] == 1);
  CHECK_FALSE(fs::exists(out / "report.lock"));
}

TEST_CASE("outputs are checked before running; a write that fails after the run exits 3 and keeps the journal", "[hardening]") {
  const ScratchDir dir("unwritable");
  const fs::path cases = dir.path / "small.json", out = dir.path / "out";
  write_text(cases, json{{"cases", {small_case}}}.dump());
  fs::create_directories(dir.path / "folder_report" / "report.json");
  const CliResult folder = run_cli("run " + quoted(cases) + " --out " + quoted(dir.path / "folder_report"));
  CHECK(folder.code == 2);
  CHECK(contains(folder.output, "report.json cannot be written: it is a folder"));
  CHECK_FALSE(fs::exists(dir.path / "folder_report" / "report.journal.jsonl"));
  check_refused(out, quoted(cases) + " --junit " + quoted(cases / "junit.xml"),
                {"--junit", "cannot be written", "small.json is not a folder"});

  // The junit path becomes a folder while the case runs: exit 3, the report
  // and the journal stay, and --resume writes the rest without recomputing.
  json slow = small_case;
  slow["params"] = {{"image", {40, 40}}, {"kernel", 5}, {"in_channels", 2}, {"out_channels", 2}, {"heads", 25},
                    {"head_dim", 2}, {"padding", 2}, {"engine", "dense"}};  // ~0.5 s
  write_text(cases, json{{"cases", {slow}}}.dump());
  const fs::path junit = dir.path / "j" / "junit.xml";
  CliResult late;
  std::thread running([&] { late = run_cli("run " + quoted(cases) + " --quiet --out " + quoted(out) + " --junit " + quoted(junit)); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!fs::exists(out / "report.journal.jsonl") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  fs::create_directories(junit / "in-the-way");
  running.join();
  INFO(late.output);
  CHECK(late.code == 3);
  CHECK(contains(late.output, "junit.xml"));
  CHECK(contains(late.output, "--resume"));
  CHECK(fs::exists(out / "report.journal.jsonl"));
  CHECK_FALSE(fs::exists(out / "report.lock"));
  fs::remove_all(junit);
  const CliResult resumed = run_cli("run " + quoted(cases) + " --quiet --resume --out " + quoted(out) + " --junit " + quoted(junit));
  INFO(resumed.output);
  CHECK(resumed.code == 0);
  CHECK(contains(read_text(junit), "<testcase"));
  CHECK(json::parse(read_text(out / "report.json"))["run"]["resumed_cases"] == 1);
  CHECK_FALSE(fs::exists(out / "report.journal.jsonl"));
}

TEST_CASE("list, proofs and schema into a full disk or a closed pipe exit 3, not 0", "[hardening]") {
  const ScratchDir dir("stdout");
  write_text(dir.path / "small.json", json{{"cases", {small_case}}}.dump());
  for (const std::string& command : std::vector<std::string>{"proofs", "schema cases", "list " + quoted(dir.path / "small.json")}) {
    const fs::path errors = dir.path / "stderr.txt";
    const int status = std::system(("'" ATTNCONV_BINARY "' " + command + " > /dev/full 2> " + quoted(errors)).c_str());
    INFO(command << ": " << read_text(errors));
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 3));
    CHECK(contains(read_text(errors), "cannot write standard output"));
    CHECK(run_cli(command + " > /dev/null").code == 0);
  }
}

TEST_CASE("--resume refuses a journal that is a FIFO, a device or 2 GB, without reading it", "[hardening]") {
  const ScratchDir dir("journal_kinds");
  const fs::path cases = dir.path / "small.json", out = dir.path / "out", journal = out / "report.journal.jsonl";
  write_text(cases, json{{"cases", {small_case}}}.dump());
  const std::string resume = "run " + quoted(cases) + " --quiet --resume --out " + quoted(out);
  fs::create_directories(out);
  ::mkfifo(journal.c_str(), 0600);  // no writer: reading it would never end
  check_refused_cli(resume, {"report.journal.jsonl: not a regular file", "run without --resume"}, {out / "report.json"});
  fs::remove(journal);
  fs::create_symlink("/dev/zero", journal);
  check_refused_cli(resume, {"report.journal.jsonl: not a regular file"}, {out / "report.json"});
  fs::remove(journal);
  write_text(journal, "");
  fs::resize_file(journal, std::uintmax_t(2) << 30);  // sparse
  check_refused_cli(resume, {"report.journal.jsonl: larger than 1 GiB"}, {out / "report.json"});
  CHECK(fs::file_size(journal) == std::uintmax_t(2) << 30);
}

TEST_CASE("a case file given twice (itself and through its folder) is read once", "[hardening]") {
  const ScratchDir dir("twice");
  write_text(dir.path / "cases" / "small.json", json{{"cases", {small_case}}}.dump());
  const CliResult listed = run_cli("list " + quoted(dir.path / "cases") + " " + quoted(dir.path / "cases" / "small.json") + " " +
                                   quoted(dir.path / "cases" / ".." / "cases" / "small.json"));
  INFO(listed.output);
  CHECK(listed.code == 0);
  CHECK(std::count(listed.output.begin(), listed.output.end(), '\n') == 1);
}

namespace {

// What stands at `path` (not followed), for "no earlier file changed": a link's target, a FIFO, a file's text.
std::string what_is_at(const fs::path& path) {
  std::error_code error;
  const auto status = fs::symlink_status(path, error);
  if (fs::is_symlink(status)) return "link to " + fs::read_symlink(path).string();
  if (fs::is_fifo(status)) return "fifo";
  if (fs::is_regular_file(status)) return "file: " + read_text(path);
  return fs::exists(status) ? "other" : "<none>";
}

// A FIFO, a link to a file, a link to nowhere, and a link to /dev/null (never written through) in `dir`.
std::vector<std::pair<fs::path, std::string>> not_regular_files(const fs::path& dir, const fs::path& target) {
  fs::create_directories(dir);
  ::mkfifo((dir / "fifo").c_str(), 0600);  // no reader: opening it for writing would block
  fs::create_symlink(target, dir / "link");
  fs::create_symlink(dir / "missing", dir / "dangling");
  fs::create_symlink("/dev/null", dir / "devnull");
  return {{dir / "fifo", "is a FIFO"},
          {dir / "link", "is a symbolic link to " + target.string()},
          {dir / "dangling", "is a symbolic link to " + (dir / "missing").string() + " that leads nowhere"},
          {dir / "devnull", "is a symbolic link to /dev/null"}};
}

}  // namespace

TEST_CASE("every output is a regular file or nothing: a FIFO, a link, a dangling link are refused, never replaced", "[hardening]") {
  const ScratchDir dir("not_regular");
  const fs::path cases = dir.path / "small.json", out = dir.path / "out", report = out / "report.json";
  const fs::path target = dir.path / "target.txt";
  write_text(cases, json{{"cases", {small_case}}}.dump());
  write_text(target, "the link's target\n");
  REQUIRE(run_cli("run " + quoted(cases) + " --quiet --out " + quoted(out)).code == 0);
  const std::string report_text = read_text(report);
  const auto odd = not_regular_files(dir.path / "odd", target);
  const auto check_kept = [&](const std::string& args, const fs::path& path, const std::vector<std::string>& expect) {
    const std::string before = what_is_at(path), target_before = read_text(target);
    check_refused_cli(args, expect, {report, out / "report.journal.jsonl", out / "report.html", cases});
    CHECK(what_is_at(path) == before);  // the FIFO or link itself is still there
    CHECK(read_text(target) == target_before);
    CHECK(read_text(report) == report_text);
    CHECK(temporary_files(path.parent_path()).empty());
  };
  for (const auto& [path, kind] : odd) {
    INFO(path);
    const std::string run = "run " + quoted(cases) + " --quiet --out " + quoted(out);
    check_kept(run + " --junit " + quoted(path), path, {"--junit " + path.string() + " cannot be written: it " + kind, "never replaced"});
    check_kept("html " + quoted(report) + " --out " + quoted(path), path, {"the page " + path.string() + " cannot be written: it " + kind});
    check_kept("merge " + quoted(report) + " --out " + quoted(dir.path / "m") + " --junit " + quoted(path), path,
               {"--junit " + path.string() + " cannot be written: it " + kind});
  }
  // Inside the folders a command fills: report.json, report.html, the lock; a case's dump; a figure.
  for (const char* name : {"report.json", "report.html", "report.lock"})
    for (const auto& [path, kind] : odd) {
      const fs::path folder = dir.path / ("in_" + std::string(name) + "_" + path.filename().string());
      fs::create_directories(folder);
      fs::rename(path, folder / name);
      INFO(folder / name);
      check_kept("run " + quoted(cases) + " --quiet --html --out " + quoted(folder), folder / name,
                 {(folder / name).string() + " cannot be written: it " + kind});
      check_kept("merge " + quoted(report) + " --html --out " + quoted(folder), folder / name,
                 {(folder / name).string() + " cannot be written: it " + kind});
      fs::rename(folder / name, path);
    }
  const fs::path dumps = dir.path / "dumps";
  fs::create_directories(dumps / "c1");
  for (const auto& [path, kind] : odd) {
    fs::rename(path, dumps / "c1" / "input.npy");
    check_kept("run " + quoted(cases) + " --quiet --out " + quoted(out) + " --dump-tensors " + quoted(dumps), dumps / "c1" / "input.npy",
               {"the --dump-tensors folder of case 'c1'", "input.npy " + kind, "a dump is written only as a regular file"});
    fs::rename(dumps / "c1" / "input.npy", path);
  }
  // --out, --dump-tensors: a folder where a folder is meant.
  check_kept("run " + quoted(cases) + " --quiet --out " + quoted(dir.path / "odd" / "fifo"), dir.path / "odd" / "fifo",
             {"fifo is not a folder"});
  check_kept("run " + quoted(cases) + " --quiet --out " + quoted(out) + " --dump-tensors " + quoted(dir.path / "odd" / "fifo"),
             dir.path / "odd" / "fifo", {"--dump-tensors", "fifo is not a folder"});
}

TEST_CASE("write_file_atomic never renames over a link, FIFO or device put there after the checks", "[hardening]") {
  const ScratchDir dir("atomic_not_regular");
  const fs::path target = dir.path / "target.txt";
  write_text(target, "kept\n");
  for (const auto& [path, kind] : not_regular_files(dir.path / "odd", target)) {
    INFO(path);
    const std::string before = what_is_at(path);
    try {
      attnconv::write_file_atomic(path.string(), "new\n");
      FAIL("written");
    } catch (const std::runtime_error& e) {
      CHECK(contains(e.what(), path.string() + " " + kind));
      CHECK(contains(e.what(), "not replaced"));
    }
    CHECK(what_is_at(path) == before);
    CHECK(read_text(target) == "kept\n");
    CHECK(temporary_files(path.parent_path()).empty());
  }
  attnconv::write_file_atomic((dir.path / "plain.txt").string(), "one\n");
  attnconv::write_file_atomic((dir.path / "plain.txt").string(), "two\n");  // a regular file is replaced
  CHECK(read_text(dir.path / "plain.txt") == "two\n");
}
