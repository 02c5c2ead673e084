// The executor (cases in child processes): report order, --jobs, --timeout,
// crash isolation, the memory budget, the journal, SIGTERM, SIGINT to the
// attnconv program (exit 130) and --resume.
// Test-only proofs sleep, crash or throw on demand.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "cli_support.hpp"
#include "cases/case_loader.hpp"
#include "io/errors.hpp"
#include "run/executor.hpp"
#include "run/runner.hpp"

namespace {

using namespace attnconv;
using namespace attnconv::testing;

// Inherited by the forked children: lets a test shorten sleeps and count runs.
double sleep_scale = 1;
std::string run_log;  // each verify() appends "<case name>\n" here

Outcome sleep_verify(const Case& c) {
  if (!run_log.empty()) std::ofstream(run_log, std::ios::app) << c.name << "\n";
  std::this_thread::sleep_for(std::chrono::duration<double>(c.params.at("seconds").get<double>() * sleep_scale));
  Outcome out;
  out.metrics = {{"max_abs", c.params.at("value").get<double>()}, {"rel_l2", 0.0}};
  return out;
}

const bool registered = [] {
  const std::vector<ParamSpec> params{
      {.name = "seconds", .kind = ParamKind::number, .default_value = 0.0, .minimum = 0.0},
      {.name = "value", .kind = ParamKind::number, .default_value = 0.0},
      {.name = "memory", .kind = ParamKind::number, .default_value = 0.0, .help = "bytes", .minimum = 0.0}};
  ProofDef sleep{.id = "test.sleep", .paper = "test", .statement = "sleeps", .params = params, .verify = sleep_verify,
                 .memory_estimate = [](const Case& c) { return c.params.at("memory").get<double>(); }};
  register_proof(sleep);
  ProofDef crash = sleep;
  crash.id = "test.crash";
  crash.verify = [](const Case&) -> Outcome { std::abort(); };
  register_proof(crash);
  ProofDef raise = sleep;
  raise.id = "test.throw";
  raise.verify = [](const Case&) -> Outcome { throw std::runtime_error("the proof threw on purpose"); };
  register_proof(raise);
  return true;
}();

std::string sleep_case(const std::string& name, double seconds, double value = 0, const std::string& proof = "test.sleep",
                       double memory = 0) {
  return json{{"name", name}, {"proof", proof}, {"params", {{"seconds", seconds}, {"value", value}, {"memory", memory}}}}.dump();
}

std::vector<Case> cases_of(const std::vector<std::string>& objects) {
  std::string text = "{\"cases\": [";
  for (std::size_t k = 0; k < objects.size(); ++k) text += (k ? "," : "") + objects[k];
  return load_case_text(text + "]}", "executor_test.json");
}

std::vector<std::string> names(const json& report) {
  std::vector<std::string> out;
  for (const auto& c : report["cases"]) out.push_back(c["name"]);
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("cases run in parallel with --jobs, reported in case order", "[executor]") {
  const ScratchDir dir("executor_jobs");
  std::vector<std::string> objects;
  double total = 0;
  for (int k = 0; k < 6; ++k) {
    const double seconds = 0.3 - 0.05 * k;  // the first case finishes last
    objects.push_back(sleep_case("s" + std::to_string(k), seconds, k));
    total += seconds;
  }
  const auto cases = cases_of(objects);
  RunOptions options;
  options.out_dir = dir.path.string();
  options.jobs = 3;
  const auto start = std::chrono::steady_clock::now();
  const json report = run_cases(cases, options);
  const double wall = seconds_since(start);
  CHECK(names(report) == std::vector<std::string>{"s0", "s1", "s2", "s3", "s4", "s5"});
  for (int k = 0; k < 6; ++k) CHECK(report["cases"][k]["metrics"]["max_abs"] == double(k));
  CHECK(report["summary"]["passed"] == 6);
  CHECK(wall < 0.8 * total);  // 3 at once: about 0.45 s of 1.05 s
  CHECK(exit_code(report) == 0);
  CHECK(json::parse(read_text(dir.path / "report.json")) == report);
  CHECK_FALSE(fs::exists(dir.path / "report.journal.jsonl"));  // a finished run needs no journal
}

TEST_CASE("a case over --timeout is stopped and reported as an error; the others run", "[executor]") {
  const ScratchDir dir("executor_timeout");
  const auto cases = cases_of({sleep_case("slow", 30), sleep_case("quick", 0)});
  RunOptions options;
  options.out_dir = dir.path.string();
  options.timeout_seconds = 0.5;
  const auto start = std::chrono::steady_clock::now();
  const json report = run_cases(cases, options);
  CHECK(seconds_since(start) < 5);
  REQUIRE(report["cases"].size() == 2);
  CHECK(report["cases"][0]["status"] == "error");
  CHECK_THAT(report["cases"][0]["message"].get<std::string>(), Catch::Contains("timed out") && Catch::Contains("--timeout 0.5"));
  CHECK(report["cases"][1]["status"] == "pass");
  CHECK(exit_code(report) == 1);
}

TEST_CASE("any accepted --timeout sleeps: the parent's CPU time stays tiny while a case runs", "[executor]") {
  for (const double left : {1e-4, 0.05, 1.0, 2.2e6, 9.99e8, 1e300}) {
    INFO("seconds left: " << left);
    CHECK(poll_wait_ms(left) >= 1);
    CHECK(poll_wait_ms(left) <= 200);
  }
  CHECK(poll_wait_ms(1e9) == 200);
  CHECK(poll_wait_ms(0.05) == 51);
  CHECK(poll_wait_ms(0) == 0);
  CHECK(poll_wait_ms(-3) == 0);

  const ScratchDir dir("executor_long_timeout");
  RunOptions options;
  options.out_dir = dir.path.string();
  options.timeout_seconds = 5e8;  // int(seconds * 1000) would overflow
  const auto cpu_seconds = [] {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);  // this process only, not the case's child
    return double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + 1e-6 * double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  };
  const double cpu_before = cpu_seconds();
  const json report = run_cases(cases_of({sleep_case("sleeps", 0.6)}), options);
  CHECK(report["cases"][0]["status"] == "pass");
  CHECK(cpu_seconds() - cpu_before < 0.15);  // a spinning wait loop burns ~0.6 s
}

TEST_CASE("a crash or an exception is isolated to its case", "[executor]") {
  const ScratchDir dir("executor_crash");
  const auto cases = cases_of({sleep_case("before", 0), sleep_case("crash", 0, 0, "test.crash"),
                               sleep_case("throw", 0, 0, "test.throw"), sleep_case("after", 0)});
  RunOptions options;
  options.out_dir = dir.path.string();
  options.jobs = 2;
  const json report = run_cases(cases, options);
  REQUIRE(names(report) == std::vector<std::string>{"before", "crash", "throw", "after"});
  CHECK(report["cases"][0]["status"] == "pass");
  CHECK(report["cases"][1]["status"] == "error");
  CHECK_THAT(report["cases"][1]["message"].get<std::string>(), Catch::Contains("crashed") && Catch::Contains("SIGABRT"));
  CHECK(report["cases"][2]["status"] == "error");
  CHECK_THAT(report["cases"][2]["message"].get<std::string>(), Catch::Contains("the proof threw on purpose"));
  CHECK(report["cases"][3]["status"] == "pass");
  CHECK(report["summary"]["errored"] == 2);
  CHECK(exit_code(report) == 1);
}

TEST_CASE("the memory budget keeps cases that do not fit together apart", "[executor]") {
  const ScratchDir dir("executor_memory");
  const auto cases = cases_of({sleep_case("a", 0.3, 0, "test.sleep", 600), sleep_case("b", 0.3, 0, "test.sleep", 600)});
  RunOptions options;
  options.out_dir = dir.path.string();
  options.jobs = 2;
  options.max_memory = 1000;  // one at a time
  auto start = std::chrono::steady_clock::now();
  CHECK(run_cases(cases, options)["summary"]["passed"] == 2);
  CHECK(seconds_since(start) >= 0.6);
  options.max_memory = 1200;  // both at once
  start = std::chrono::steady_clock::now();
  CHECK(run_cases(cases, options)["summary"]["passed"] == 2);
  CHECK(seconds_since(start) < 0.55);
}

TEST_CASE("SIGTERM ends the run with a valid report of the finished cases; --resume finishes it", "[executor]") {
  const ScratchDir dir("executor_sigterm");
  run_log = (dir.path / "runs.log").string();
  sleep_scale = 1;
  const auto cases = cases_of({sleep_case("q0", 0, 10), sleep_case("q1", 0, 11), sleep_case("q2", 0, 12),
                               sleep_case("slow0", 60, 13), sleep_case("slow1", 60, 14)});
  RunOptions options;
  options.out_dir = dir.path.string();
  const fs::path journal = dir.path / "report.journal.jsonl";

  // Send SIGTERM once the three quick cases are in the journal.
  std::thread killer([&] {
    const auto start = std::chrono::steady_clock::now();
    while (seconds_since(start) < 30) {
      const std::string text = fs::exists(journal) ? read_text(journal) : "";
      if (std::count(text.begin(), text.end(), '\n') >= 4) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::kill(::getpid(), SIGTERM);
  });
  const auto start = std::chrono::steady_clock::now();
  const json report = run_cases(cases, options);
  killer.join();
  CHECK(seconds_since(start) < 20);
  CHECK(report["interrupted"] == true);
  CHECK(report["interrupted_by"].get<std::string>().find("SIGTERM") == 0);
  CHECK(names(report) == std::vector<std::string>{"q0", "q1", "q2"});
  CHECK(report["not_run"] == json{"slow0", "slow1"});
  CHECK(report["summary"]["total"] == 3);
  CHECK(report["summary"]["passed"] == 3);
  CHECK(report["summary"]["not_run"] == 2);
  CHECK(exit_code(report) == 128 + SIGTERM);
  CHECK(json::parse(read_text(dir.path / "report.json")) == report);  // on disk, complete and valid
  REQUIRE(fs::exists(journal));

  // A kill in the middle of a journal line: resume drops the torn line.
  std::ofstream(journal, std::ios::app) << "{\"index\": 3, \"entry\": {\"na";

  SECTION("--resume runs only the unfinished cases") {
    sleep_scale = 0;
    options.resume = true;
    const json resumed = run_cases(cases, options);
    CHECK_FALSE(resumed.contains("interrupted"));
    CHECK(names(resumed) == std::vector<std::string>{"q0", "q1", "q2", "slow0", "slow1"});
    for (int k = 0; k < 3; ++k) CHECK(resumed["cases"][k] == report["cases"][k]);  // the journaled entries, as they were
    CHECK(resumed["cases"][4]["metrics"]["max_abs"] == 14.0);
    CHECK(resumed["run"]["resumed_cases"] == 3);
    CHECK(exit_code(resumed) == 0);
    CHECK(read_text(run_log) == "q0\nq1\nq2\nslow0\nslow0\nslow1\n");  // q* ran once; slow0 was killed, then ran again
    CHECK_FALSE(fs::exists(journal));
  }
  SECTION("--resume with another case list is refused and changes nothing") {
    const std::string before = read_text(journal);
    options.resume = true;
    auto other = cases;
    other[4].params["value"] = 99.0;
    CHECK_THROWS_WITH(run_cases(other, options), Catch::Contains("different case list") && Catch::Contains("slow1"));
    other.pop_back();
    CHECK_THROWS_WITH(run_cases(other, options), Catch::Contains("5 cases then, 4 now"));
    CHECK(read_text(journal) == before);
  }
  run_log.clear();
  sleep_scale = 1;
}

TEST_CASE("SIGINT to the attnconv program: exit 130, a valid interrupted report, and --resume finishes", "[executor]") {
  const ScratchDir dir("executor_sigint");
  const fs::path file = dir.path / "cases.json", out = dir.path / "out", journal = out / "report.journal.jsonl";
  // Eight dense-engine cases of a few tenths of a second each.
  write_text(file, R"({"cases": [{"name": "d", "proof": "cordonnier2020.theorem1",
    "params": {"image": [48, 48], "kernel": 3, "in_channels": 16, "out_channels": 16, "heads": 9,
               "head_dim": 16, "padding": 1, "engine": "dense"},
    "sweep": {"seed": [1, 2, 3, 4, 5, 6, 7, 8]}}]})");
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    ::execl(ATTNCONV_BINARY, ATTNCONV_BINARY, "run", file.c_str(), "--out", out.c_str(), "--jobs", "1",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Interrupt once the journal holds its header and one finished case.
  const auto start = std::chrono::steady_clock::now();
  while (seconds_since(start) < 60) {
    const std::string text = fs::exists(journal) ? read_text(journal) : "";
    if (std::count(text.begin(), text.end(), '\n') >= 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  const json report = json::parse(read_text(out / "report.json"));
  CHECK(report["interrupted"] == true);
  CHECK(report["interrupted_by"].get<std::string>().find("SIGINT") == 0);
  const std::size_t finished = report["cases"].size(), not_run = report["not_run"].size();
  CHECK(finished >= 1);
  CHECK(not_run >= 1);
  CHECK(finished + not_run == 8);

  const CliResult resumed = run_cli("run " + quoted(file) + " --out " + quoted(out) + " --resume --quiet");
  INFO(resumed.output);
  CHECK(resumed.code == 0);
  const json whole = json::parse(read_text(out / "report.json"));
  CHECK(whole["cases"].size() == 8);
  CHECK(whole["run"]["resumed_cases"] == finished);
  CHECK_FALSE(whole.contains("interrupted"));
}
