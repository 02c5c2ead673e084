// The verdict of a case from its outcome: holds / bound holds / fails / fails
// as predicted / error, the status it gives, and the plain-words message;
// end to end, the inputs that once passed with a NaN output.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "proof/verdict.hpp"

using namespace attnconv;
using namespace attnconv::testing;

namespace {

const double not_a_number = std::numeric_limits<double>::quiet_NaN();

Case theorem1_case(const std::string& expect = "hold", json tolerance = json::object()) {
  Case c;
  c.name = "c";
  c.proof = "cordonnier2020.theorem1";
  c.params = {{"dtype", "float64"}, {"alpha", 0.5}};
  c.request = {.tolerance = std::move(tolerance), .expect = *expect_from_string(expect)};
  return c;
}

// An outcome as construction_outcome makes it: the bound as default tolerance,
// the round-off allowance as the round-off one.
Outcome outcome(double max_abs, double rel_l2, double bound = 119, double roundoff = 3e-12) {
  Outcome out;
  out.metrics = {{"max_abs", max_abs}, {"rel_l2", rel_l2}, {"bound", bound}, {"weight_distance", 0.0}};
  out.default_tolerance = {{"max_abs", bound}};
  out.roundoff_tolerance = {{"max_abs", roundoff}};
  out.tensors = {{"expected", xt::xarray<double>{{1.0, 2.0}, {3.0, 4.0}}},
                 {"actual", xt::xarray<double>{{1.0, 2.0}, {3.0, 4.0}}}};
  return out;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("to round-off: holds; within the bound only: bound holds (a pass that says so)", "[verdict]") {
  const Judgement exact = judge(theorem1_case(), outcome(2e-15, 3e-16));
  CHECK(exact.status == Status::pass);
  CHECK(exact.verdict == Verdict::holds);
  CHECK(has(exact.message, "to round-off (max_abs = 2e-15 <= 3e-12)"));

  const Judgement approached = judge(theorem1_case(), outcome(3.42, 0.82));
  CHECK(approached.status == Status::pass);
  CHECK(approached.verdict == Verdict::bound_holds);
  CHECK(has(approached.message, "max_abs = 3.42 <= 119"));
  CHECK(has(approached.message, "approached, not reached, at alpha = 0.5"));
  CHECK(has(approached.message, "rel_l2 = 0.82"));
  CHECK(approached.tolerance == json{{"max_abs", 119.0}});
}

TEST_CASE("a case tolerance decides holds or fails; an expected failure that holds is a fail", "[verdict]") {
  const Judgement within = judge(theorem1_case("hold", {{"rel_l2", 1.0}}), outcome(3.42, 0.82));
  CHECK(within.verdict == Verdict::holds);
  CHECK(within.status == Status::pass);
  CHECK(has(within.message, "within the case's tolerance (rel_l2 = 0.82 <= 1)"));

  const Judgement over = judge(theorem1_case("hold", {{"rel_l2", 0.5}}), outcome(3.42, 0.82));
  CHECK(over.verdict == Verdict::fails);
  CHECK(over.status == Status::fail);
  CHECK(has(over.message, "rel_l2 = 0.82 > 0.5"));

  const Judgement unexpected = judge(theorem1_case("fail"), outcome(2e-15, 3e-16));
  CHECK(unexpected.verdict == Verdict::holds);
  CHECK(unexpected.status == Status::fail);
  CHECK(has(unexpected.message, "expects the claim to fail"));
}

TEST_CASE("a converse passes only with its predicted failure measured, finite and at least the floor", "[verdict]") {
  Outcome measured = outcome(3.6, 0.46, 1e-12);
  measured.metrics["weight_distance"] = 4.18;
  measured.predicted_failure = PredictedFailure{"weight_distance", 4.18, 1e-13, "the Eckart-Young distance"};
  const Judgement as_predicted = judge(theorem1_case("fail"), measured);
  CHECK(as_predicted.verdict == Verdict::fails_as_predicted);
  CHECK(as_predicted.status == Status::pass);
  CHECK(has(as_predicted.message, "weight_distance = 4.18 >= the predicted floor 4.18 (the Eckart-Young distance)"));

  // Exceeding the tolerance alone is no confirmed converse: each of these fails.
  struct Unconfirmed {
    double weight_distance, floor;
    bool predicted;
    std::string why;
  };
  for (const Unconfirmed& u : {Unconfirmed{1.0, 4.18, true, "below the predicted floor 4.18"},
                               Unconfirmed{0.0, 0.0, true, "is not a positive failure"},
                               Unconfirmed{4.18, 4.18, false, "predicts no failure"}}) {
    Outcome o = measured;
    o.metrics["weight_distance"] = u.weight_distance;
    o.predicted_failure->floor = u.floor;
    if (!u.predicted) o.predicted_failure.reset();
    const Judgement v = judge(theorem1_case("fail"), o);
    INFO(v.message);
    CHECK(v.verdict == Verdict::fails);
    CHECK(v.status == Status::fail);
    CHECK(has(v.message, u.why));
  }
}

TEST_CASE("a non-finite tensor, error metric or limit is an error naming it and where", "[verdict]") {
  for (const std::string expect : {"hold", "fail"}) {
    Outcome nan_tensor = outcome(not_a_number, not_a_number, not_a_number);
    std::get<xt::xarray<double>>(nan_tensor.tensors[1].data)(1, 0) = -std::numeric_limits<double>::infinity();
    const Judgement v = judge(theorem1_case(expect), nan_tensor);
    CHECK(v.verdict == Verdict::error);
    CHECK(v.status == Status::error);
    CHECK(has(v.message, "tensor 'actual' has -inf at [1, 0]"));
  }
  Outcome nan_metric = outcome(1e-15, not_a_number);
  const Judgement metric = judge(theorem1_case("fail"), nan_metric);
  CHECK(metric.verdict == Verdict::error);
  CHECK(has(metric.message, "error metric rel_l2 is nan"));

  const Judgement limit = judge(theorem1_case("fail"), outcome(1e-15, 1e-16, not_a_number));
  CHECK(limit.verdict == Verdict::error);
  CHECK(has(limit.message, "the tolerance on max_abs is nan"));
}

TEST_CASE("end to end: huge alpha or input gives NaN and an error, never a predicted failure; the summary counts "
          "verdicts",
          "[verdict]") {
  ScratchDir dir("verdict_cli");
  const json params = {{"image", {6, 6}}, {"kernel", 3}, {"in_channels", 2}, {"out_channels", 3},
                       {"heads", 9},      {"head_dim", 3}, {"padding", 1}};
  json f64 = {{"name", "huge-f64"}, {"proof", "cordonnier2020.theorem1"}, {"expect", "fail"}, {"params", params}};
  f64["params"]["alpha"] = 1e308;
  json f32 = f64;
  f32["name"] = "huge-f32", f32["params"]["alpha"] = 1e300, f32["params"]["dtype"] = "float32";
  json low = {{"name", "low-alpha"}, {"proof", "cordonnier2020.theorem1"}, {"params", params}};
  low["params"]["alpha"] = 0.5;
  std::vector<double> input(72, 0.5);
  input[50] = 1e308;  // finite, but the finite-alpha bound overflows
  write_npy(dir.path / "x.npy", "<f8", {2, 6, 6}, raw_bytes(input));
  json big = {{"name", "big-input"}, {"proof", "cordonnier2020.theorem1"}, {"expect", "fail"}, {"params", params},
              {"weights", {{"input", "x.npy"}}}};
  write_text(dir.path / "cases.json", json{{"cases", {f64, f32, low, big}}}.dump());
  const CliResult result = run_cli("run " + quoted(dir.path / "cases.json") + " --out " + quoted(dir.path / "out"));
  INFO(result.output);
  CHECK(result.code == 1);
  CHECK(has(result.output, "1 passed, 0 failed, 3 errored in"));
  CHECK(has(result.output, "; 1 bound holds, 3 error;"));
  const json report = json::parse(read_text(dir.path / "out" / "report.json"));
  REQUIRE(report["cases"].size() == 4);
  CHECK(report["cases"][3]["verdict"] == "error");
  CHECK(has(report["cases"][3]["message"], "the tolerance on max_abs is inf"));
  CHECK(std::isfinite(report["cases"][3]["metrics"]["rel_l2"].get<double>()));  // the metrics are scaled (compare.hpp)
  for (int k : {0, 1}) {
    const json& c = report["cases"][k];
    INFO(c.dump());
    CHECK(c["status"] == "error");
    CHECK(c["verdict"] == "error");
    CHECK(has(c["message"], "tensor 'actual' has nan at [0, 0, 0]"));
  }
  CHECK(report["cases"][2]["verdict"] == "bound holds");
  CHECK(report["cases"][2]["status"] == "pass");
  CHECK(report["cases"][2]["metrics"]["rel_l2"].get<double>() > 0.5);
  CHECK(report["summary"]["verdicts"] ==
        json{{"holds", 0}, {"bound holds", 1}, {"fails", 0}, {"fails as predicted", 0}, {"error", 3}});
}

TEST_CASE("a tolerance may name any error metric, weight_distance included", "[verdict]") {
  ScratchDir dir("verdict_weight_distance");
  const json c = {{"name", "wd"},
                  {"proof", "cordonnier2020.theorem1"},
                  {"params", {{"image", {6, 6}}, {"kernel", 3}, {"in_channels", 2}, {"out_channels", 3},
                              {"heads", 9}, {"head_dim", 3}, {"padding", 1}}},
                  {"tolerance", {{"weight_distance", 1e-12}, {"max_abs", 1e-12}}}};
  write_text(dir.path / "cases.json", json{{"cases", {c}}}.dump());
  const CliResult result = run_cli("run " + quoted(dir.path / "cases.json") + " --quiet --out " + quoted(dir.path / "out"));
  INFO(result.output);
  CHECK(result.code == 0);
  const json entry = json::parse(read_text(dir.path / "out" / "report.json"))["cases"][0];
  CHECK(entry["verdict"] == "holds");
  CHECK(entry["metrics"]["weight_distance"].get<double>() <= 1e-12);
}

TEST_CASE("end to end: a tiny alpha is never 'holds': the round-off allowance stays round-off, the bound <= 2 x head scale",
          "[verdict]") {
  ScratchDir dir("verdict_tiny_alpha");
  json c = small_theorem1_case();
  c["sweep"] = {{"alpha", {5e-324, 1e-20, 0.5}}};  // 1 - P <= eps(alpha) ~ pi / alpha: capped at 1
  write_text(dir.path / "cases.json", json{{"cases", {c}}}.dump());
  const CliResult result = run_cli("run " + quoted(dir.path / "cases.json") + " --quiet --out " + quoted(dir.path / "out"));
  INFO(result.output);
  CHECK(result.code == 0);
  const json report = json::parse(read_text(dir.path / "out" / "report.json"));
  REQUIRE(report["cases"].size() == 3);
  for (const json& entry : report["cases"]) {
    INFO(entry.dump());
    CHECK(entry["verdict"] == "bound holds");
    CHECK(entry["metrics"]["rel_l2"].get<double>() > 0.1);
    CHECK(entry["metrics"]["roundoff_allowance"].get<double>() < 1e-10);
    CHECK(std::isfinite(entry["metrics"]["bound"].get<double>()));
  }
  // the same bound (2 x head scale + round-off) for every alpha whose eps exceeds 1
  CHECK(report["cases"][0]["metrics"]["bound"] == report["cases"][1]["metrics"]["bound"]);
}
