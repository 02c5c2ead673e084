// Provenance and --resume: each loaded .npy's size and SHA-256 are in the case
// entry and the journal; on --resume a case whose file changed, or that
// errored, runs again, and the others are reused.
#include <catch2/catch.hpp>

#include "cli_support.hpp"
#include "cases/case_loader.hpp"
#include "run/journal.hpp"
#include "run/runner.hpp"
#include "io/sha256.hpp"
#include "proof/npy.hpp"

namespace {

using namespace attnconv;
using namespace attnconv::testing;

std::string provenance_log;  // each verify() appends "<case name>\n" (inherited by the forked children)

Outcome logged_verify(const Case& c) {
  std::ofstream(provenance_log, std::ios::app) << c.name << "\n";
  if (c.name == "err") throw std::runtime_error("fails on purpose");
  Outcome out;
  out.metrics = {{"max_abs", 0.0}, {"rel_l2", 0.0}};
  return out;
}

const bool registered =
    register_proof({.id = "test.provenance", .paper = "test", .statement = "logs its runs", .verify = logged_verify});

std::string doubles(std::vector<double> values) { return raw_bytes(values); }

// Reads its sample of a batch input (N, 2); after sample 0 it rewrites the
// batch file with other numbers, so a sample that read the file again would
// find it changed. max_abs: the sample's second number.
std::string batch_file;
Outcome batch_verify(const Case& c) {
  const xt::xarray<double> x = load_case_tensor<double>(c, "input", {2});
  if (c.sample == 0) write_npy(batch_file, "<f8", {3, 2}, doubles({-1, -1, -1, -1, -1, -1}));
  Outcome out;
  out.metrics = {{"max_abs", x(1)}, {"rel_l2", 0.0}};
  out.default_tolerance = {{"max_abs", 100.0}};
  return out;
}

const bool registered_batch = register_proof({.id = "test.batch_slices",
                                              .paper = "test",
                                              .statement = "reads its sample of a batch",
                                              .verify = batch_verify,
                                              .expected_tensors = [](const Case&) {
                                                return TensorShapes{{"input", {2}}};
                                              }});

}  // namespace

TEST_CASE("SHA-256 is FIPS 180-4's", "[provenance]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 split;
  split.update("a", 1);
  CHECK(split.hex_digest() == sha256_hex("a"));  // usable after a digest
  split.update("bc", 2);
  CHECK(split.hex_digest() == sha256_hex("abc"));
}

TEST_CASE("--resume runs again the cases whose .npy changed or that errored, and reuses the rest", "[provenance]") {
  const ScratchDir dir("provenance");
  provenance_log = (dir.path / "runs.log").string();
  write_npy(dir.path / "a.npy", "<f8", {3}, doubles({1, 2, 3}));
  write_npy(dir.path / "b.npy", "<f8", {3}, doubles({4, 5, 6}));
  const fs::path file = dir.path / "cases.json";
  write_text(file, R"({"cases": [
    {"name": "ua", "proof": "test.provenance", "weights": {"x": "a.npy"}},
    {"name": "ub", "proof": "test.provenance", "weights": {"x": "b.npy"}},
    {"name": "err", "proof": "test.provenance"},
    {"name": "plain", "proof": "test.provenance"}]})");
  const auto cases = load_case_file(file.string());
  const json a = cases[0].provenance["x"];
  CHECK(a["file"] == "a.npy");
  CHECK(a["bytes"] == 128 + 24);
  CHECK(a["sha256"] == sha256_hex(read_text(dir.path / "a.npy")));

  // A run that stopped after every case had finished once (its journal is left).
  RunOptions options;
  options.out_dir = (dir.path / "out").string();
  fs::create_directories(options.out_dir);
  const std::string journal_path = options.out_dir + "/report.journal.jsonl";
  {
    Journal journal = Journal::start(journal_path, cases);
    for (std::size_t i = 0; i < cases.size(); ++i) journal.append(i, run_case(cases[i], options));
  }
  CHECK(read_text(journal_path).find(a["sha256"].get<std::string>()) != std::string::npos);  // in the journal
  CHECK(read_text(provenance_log) == "ua\nub\nerr\nplain\n");

  write_npy(dir.path / "b.npy", "<f8", {3}, doubles({4, 5, 7}));  // same size, other numbers
  options.resume = true;
  const json report = run_cases(load_case_file(file.string()), options);
  CHECK(read_text(provenance_log) == "ua\nub\nerr\nplain\nub\nerr\n");
  CHECK(report["run"]["resumed_cases"] == 2);
  CHECK(report["cases"][0]["provenance"]["x"] == a);
  CHECK(report["cases"][1]["provenance"]["x"]["sha256"] == sha256_hex(read_text(dir.path / "b.npy")));
  CHECK(report["cases"][1]["provenance"]["x"]["sha256"] != report["cases"][0]["provenance"]["x"]["sha256"]);
  CHECK(report["cases"][2]["status"] == "error");
  CHECK_FALSE(fs::exists(journal_path));
  provenance_log.clear();
}

TEST_CASE("a .npy that changes between loading and running makes its case an error, not a mislabelled result", "[provenance]") {
  const ScratchDir dir("provenance_changed");
  write_npy(dir.path / "x.npy", "<f8", {2, 6, 6}, doubles(std::vector<double>(72, 0.25)));
  write_text(dir.path / "cases.json", R"({"cases": [{"name": "c", "proof": "cordonnier2020.theorem1",
    "params": {"image": [6, 6], "kernel": 3, "in_channels": 2, "out_channels": 3, "heads": 9, "head_dim": 3, "padding": 1},
    "weights": {"input": "x.npy"}}]})");
  const auto cases = load_case_file((dir.path / "cases.json").string());
  RunOptions options;
  CHECK(run_case(cases[0], options)["status"] == "pass");
  write_npy(dir.path / "x.npy", "<f8", {2, 6, 6}, doubles(std::vector<double>(72, 0.5)));
  const json entry = run_case(cases[0], options);
  CHECK(entry["status"] == "error");
  CHECK_THAT(entry["message"].get<std::string>(), Catch::Contains("x.npy changed after the cases were loaded"));
}

TEST_CASE("a batch is read once for all its samples, each sample a slice of the bytes checked", "[provenance]") {
  const ScratchDir dir("provenance_batch");
  batch_file = (dir.path / "x.npy").string();
  write_npy(batch_file, "<f8", {3, 2}, doubles({0, 1, 2, 3, 4, 5}));
  const std::string original = sha256_hex(read_text(batch_file));
  write_text(dir.path / "cases.json", R"({"cases": [{"name": "b", "proof": "test.batch_slices", "weights": {"input": "x.npy"}}]})");
  const auto cases = load_case_file((dir.path / "cases.json").string());
  REQUIRE(cases[0].batch == 3);
  RunOptions options;
  // Sample 0 rewrites the file: samples 1 and 2 are still those of the file as loaded (and hashed).
  const json entry = run_case(cases[0], options);
  CHECK(entry["status"] == "pass");
  CHECK(entry["metrics"]["max_abs_per_sample"] == json::array({1.0, 3.0, 5.0}));
  CHECK(entry["provenance"]["input"]["sha256"] == original);  // the file of the numbers checked
  // The file now differs from the one loaded: the run's one read of the batch finds it changed.
  const json again = run_case(cases[0], options);
  CHECK(again["status"] == "error");
  CHECK_THAT(again["message"].get<std::string>(), Catch::Contains("x.npy changed after the cases were loaded"));
}
