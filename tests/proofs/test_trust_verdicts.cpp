// Issue 24, B5-B7, B9, C10: what a hostile case file cannot make a proof say.
// Each test runs the program as a user does and asserts the exit code, the
// verdict and the message: precisions whose determinant overflows and centres
// far outside the image are refused when loading (exit 2), a layer whose
// loaded values or input are all zero is never "holds" (verdict "error":
// nothing is checked), a zero weight_scale and a window that cannot sit on the
// image are refused, and absolute_encoding's converse with too few heads or a
// small head_dim, which its refusal recommends, runs and fails as predicted.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"

using namespace attnconv::testing;
using json = nlohmann::json;

namespace {

std::string doubles(const std::vector<double>& v) { return raw_bytes(v); }

// Runs `cases` (one file in `dir`) and returns the result and, when written, the report.
struct Ran {
  CliResult result;
  json report;
};
Ran run_cases(const ScratchDir& dir, const std::vector<json>& cases) {
  json file = json::object();
  file["cases"] = json(cases);
  write_text(dir.path / "bad.json", file.dump(2));
  const fs::path out = dir.path / "out";
  fs::remove_all(out);
  Ran ran{run_cli("run " + quoted(dir.path / "bad.json") + " --out " + quoted(out) + " --quiet"), json()};
  if (fs::exists(out / "report.json")) ran.report = json::parse(read_text(out / "report.json"));
  return ran;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A nearest_convolution case of two heads on a 6 x 6 image, loading `weights`
// (the other tensors drawn from the seed).
json nearest(const std::string& name, const json& weights) {
  return {{"name", name},
          {"proof", "cordonnier2020.nearest_convolution"},
          {"params",
           {{"image", {6, 6}}, {"in_channels", 3}, {"out_channels", 4}, {"heads", 2}, {"head_dim", 4}, {"kernel", 3}}},
          {"tolerance", {{"rel_l2", 100}}},
          {"weights", weights},
          {"weights_partial", true}};
}

}  // namespace

TEST_CASE("B5: a precision whose determinant overflows is refused, naming the case, the key and the head",
          "[trust_verdicts]") {
  const ScratchDir dir("trust_psd");
  const std::vector<std::vector<double>> bad{{1, 0, 0, 1, 1e160, 2e160, 2e160, 1e160},
                                             {1, 0, 0, 1, 1e200, 1e200, 1e200, -1e-300},
                                             {1, 0, 0, 1, -1e300, 0, 0, -1e300}};
  for (const auto& values : bad) {
    write_npy(dir.path / "p.npy", "<f8", {2, 2, 2}, doubles(values));
    const Ran ran = run_cases(dir, {nearest("psd", {{"precisions", "p.npy"}})});
    INFO(ran.result.output);
    CHECK(ran.result.code == 2);
    CHECK(contains(ran.result.output, "bad.json: case 'psd': key 'weights.precisions': head 1's precision is not "
                                      "positive semi-definite"));
    CHECK(ran.report.is_null());
  }
  // Non-finite entries are refused too (by the .npy check), and a large positive definite one is not.
  write_npy(dir.path / "p.npy", "<f8", {2, 2, 2},
            doubles({1, 0, 0, 1, std::numeric_limits<double>::infinity(), 0, 0, 1}));
  const Ran inf = run_cases(dir, {nearest("psd", {{"precisions", "p.npy"}})});
  CHECK(inf.result.code == 2);
  CHECK(contains(inf.result.output, "case 'psd': key 'weights.precisions'"));
  CHECK(contains(inf.result.output, "Inf"));
  write_npy(dir.path / "p.npy", "<f8", {2, 2, 2}, doubles({1, 0, 0, 1, 1e160, 0.5e160, 0.5e160, 1e160}));
  const Ran large = run_cases(dir, {nearest("psd", {{"precisions", "p.npy"}})});
  INFO(large.result.output);
  CHECK(large.result.code != 2);
}

TEST_CASE("B6: a centre beyond twice the image side is refused; one at its edge gives its own tap", "[trust_verdicts]") {
  const ScratchDir dir("trust_centres");
  for (const double far : {1e10, -1e10, 12.5, -1e300}) {
    write_npy(dir.path / "c.npy", "<f8", {2, 2}, doubles({0, 0, far, -far}));
    const Ran ran = run_cases(dir, {nearest("far", {{"centers", "c.npy"}})});
    INFO(far << ": " << ran.result.output);
    CHECK(ran.result.code == 2);
    CHECK(contains(ran.result.output, "bad.json: case 'far': key 'weights.centers': head 1's centre"));
    CHECK(contains(ran.result.output, "beyond +-12 (twice the image side)"));
    CHECK_FALSE(contains(ran.result.output, "2147483648"));
    CHECK(ran.report.is_null());
  }
  write_npy(dir.path / "c.npy", "<f8", {2, 2}, doubles({0, 0, 12, -12}));
  const Ran edge = run_cases(dir, {nearest("edge", {{"centers", "c.npy"}})});
  INFO(edge.result.output);
  REQUIRE(edge.report.is_object());
  const json& metrics = edge.report["cases"][0]["metrics"];
  CHECK(metrics["tap"][1] == json::array({12, -12}));
  CHECK(metrics["center_distance"][1] == 0.0);
}

TEST_CASE("B7: a layer whose loaded values or input are all zero is never 'holds': nothing is checked",
          "[trust_verdicts]") {
  const ScratchDir dir("trust_vacuous");
  write_npy(dir.path / "w_val.npy", "<f8", {2, 3, 4}, doubles(std::vector<double>(24, 0.0)));
  write_npy(dir.path / "x.npy", "<f8", {2, 6, 6}, doubles(std::vector<double>(72, 0.0)));
  write_npy(dir.path / "w.npy", "<f8", {3, 2, 3, 3}, doubles(std::vector<double>(54, 0.0)));
  json theorem1 = small_theorem1_case();
  theorem1["name"] = "t1-zero-weight";
  theorem1["weights"] = {{"conv_weight", "w.npy"}};
  theorem1["weights_partial"] = true;
  json theorem1_input = small_theorem1_case();
  theorem1_input["name"] = "t1-zero-input";
  theorem1_input["weights"] = {{"input", "x.npy"}};
  const Ran ran = run_cases(dir, {nearest("nc-zero-values", {{"w_val", "w_val.npy"}}), theorem1, theorem1_input});
  INFO(ran.result.output);
  CHECK(ran.result.code == 1);
  REQUIRE(ran.report.is_object());
  const json& cases = ran.report["cases"];
  REQUIRE(cases.size() == 3);
  for (const json& c : cases) {
    INFO(c["name"] << ": " << c["message"]);
    CHECK(c["verdict"] == "error");
    CHECK(c["status"] == "error");
    CHECK(contains(c["message"].get<std::string>(), "nothing is checked"));
    CHECK(c["metrics"].contains("max_abs"));  // the metrics are still reported
  }
  CHECK(contains(cases[0]["message"].get<std::string>(),
                 "error: W_val (the layer's values) is all zero: both sides are b_out; nothing is checked"));
  CHECK(contains(cases[1]["message"].get<std::string>(), "conv_weight (the convolution, and so the layer's values) is "
                                                         "all zero: both sides are the bias"));
  CHECK(contains(cases[2]["message"].get<std::string>(), "error: the input is all zero: both sides are the bias"));
}

TEST_CASE("B7: convit_gpsa refuses weight_scale 0 (W_proj would be 0: both sides b_proj)", "[trust_verdicts]") {
  const ScratchDir dir("trust_gpsa_scale");
  json gpsa = {{"name", "g"}, {"proof", "dascoli2021.convit_gpsa"}, {"expect", "fail"}};
  gpsa["params"] = {{"image", {8, 8}}, {"heads", 4}, {"head_dim", 4}, {"weight_scale", 0}};
  const Ran ran = run_cases(dir, {gpsa});
  INFO(ran.result.output);
  CHECK(ran.result.code == 2);
  CHECK(contains(ran.result.output, "bad.json: case 'g': key 'params.weight_scale'"));
  CHECK(ran.report.is_null());
}

TEST_CASE("B9: absolute_encoding's converse with too few heads or a small head_dim fails as predicted",
          "[trust_verdicts]") {
  const ScratchDir dir("trust_absolute_converse");
  const auto absolute = [](const std::string& name, int heads, int head_dim, const std::string& expect) {
    return json{{"name", name},
                {"proof", "cordonnier2020.absolute_encoding"},
                {"expect", expect},
                {"params",
                 {{"image", {6, 6}}, {"kernel", 3}, {"in_channels", 3}, {"out_channels", 4}, {"heads", heads},
                  {"head_dim", head_dim}, {"padding", 1}, {"seed", 5}}}};
  };
  // Without "expect": "fail" the refusal recommends it...
  const Ran refused = run_cases(dir, {absolute("few", 4, 4, "hold")});
  CHECK(refused.result.code == 2);
  CHECK(contains(refused.result.output, "key 'params.heads'"));
  CHECK(contains(refused.result.output, "set \"expect\": \"fail\""));
  // ... and with it the converse is confirmed.
  const Ran ran = run_cases(dir, {absolute("few-heads", 4, 4, "fail"), absolute("small-head-dim", 9, 2, "fail")});
  INFO(ran.result.output);
  CHECK(ran.result.code == 0);
  REQUIRE(ran.report.is_object());
  for (const json& c : ran.report["cases"]) {
    INFO(c["name"] << ": " << c["message"]);
    CHECK(c["verdict"] == "fails as predicted");
    CHECK(c["metrics"]["weight_distance"].get<double>() >= c["metrics"]["failure_floor"].get<double>());
    CHECK_FALSE(contains(c["message"].get<std::string>(), "predicts no failure"));
  }
  CHECK(ran.report["cases"][0]["metrics"]["failure_floor"] == 0.0);
  CHECK(ran.report["cases"][1]["metrics"]["eckart_young"].get<double>() > 0);
}

TEST_CASE("C10: convit_gpsa refuses a window that cannot sit on the image, naming params.window", "[trust_verdicts]") {
  const ScratchDir dir("trust_gpsa_window");
  const auto gpsa = [](const json& image, const json& window) {
    return json{{"name", "g"},
                {"proof", "dascoli2021.convit_gpsa"},
                {"expect", "fail"},
                {"params", {{"image", image}, {"heads", 4}, {"head_dim", 2}, {"window", window}}}};
  };
  for (const auto& [image, window] : std::vector<std::pair<json, json>>{{{8, 8}, {8, 8}},
                                                                        {{8, 8}, {-3, 3}},
                                                                        {{8, 8}, {0, 3}},
                                                                        {{8, 8}, {9, 3}},
                                                                        {{7, 6}, {3, 6}},
                                                                        {{2, 2}, {3, 3}}}) {
    const Ran ran = run_cases(dir, {gpsa(image, window)});
    INFO(image << " " << window << ": " << ran.result.output);
    CHECK(ran.result.code == 2);
    CHECK(contains(ran.result.output, "bad.json: case 'g': key 'params.window'"));
    CHECK_FALSE(contains(ran.result.output, "window_kernel"));
    CHECK_FALSE(contains(ran.result.output, "std::"));
    CHECK(ran.report.is_null());
  }
  for (const json& image : {json{0, 8}, json{-8, 8}}) {
    const Ran ran = run_cases(dir, {gpsa(image, {1, 1})});
    INFO(image << ": " << ran.result.output);
    CHECK(ran.result.code == 2);
    CHECK(contains(ran.result.output, "key 'params.image'"));
  }
  // An odd window as large as the image, and an even one smaller, run (on a square grid: issue 25.5).
  const Ran fits = run_cases(dir, {gpsa({7, 7}, {7, 6})});
  INFO(fits.result.output);
  CHECK(fits.result.code != 2);
  REQUIRE(fits.report.is_object());
  CHECK(fits.report["cases"][0]["verdict"] != "error");
}
