// End to end: the built attnconv program (ATTNCONV_BINARY) on case files
// written to a fresh temporary folder. The contracts checked are docs/design.md's
// "Command line", "Reports" and "Tensor dumps" sections.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xnpy.hpp>
#include <xtensor/xstrided_view.hpp>

#include "cli_support.hpp"
#include "ops/conv2d_gemm.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace attnconv;
using namespace attnconv::testing;

struct Result {
  int code;
  std::string out, err;
};

// Runs `attnconv ARGS` (ARGS already shell-quoted where needed) from `dir`.
Result run_attnconv(const ScratchDir& dir, const std::string& args) {
  const fs::path out = dir.path / "stdout.txt", err = dir.path / "stderr.txt";
  const std::string command = "cd '" + dir.path.string() + "' && '" + std::string(ATTNCONV_BINARY) + "' " + args +
                              " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  Result r{WEXITSTATUS(status), read_text(out), read_text(err)};
  fs::remove(out), fs::remove(err);
  return r;
}

json read_json(const fs::path& path) {
  std::ifstream stream(path);
  REQUIRE(stream);
  return json::parse(stream);
}

// Three cases (four after the sweep): float64 "same", float32 with reflect
// padding, stride, dilation and no bias, and an alpha sweep.
const char* const good_cases = R"({
  "description": "test_cli",
  "cases": [
    {"name": "cli-k3-same", "proof": "cordonnier2020.theorem1",
     "params": {"image": [6, 7], "kernel": 3, "in_channels": 2, "out_channels": 3, "heads": 9, "head_dim": 3,
                "padding": "same", "seed": 3}},
    {"name": "cli-k2x3-reflect", "proof": "cordonnier2020.theorem1",
     "params": {"image": [7, 6], "kernel": [2, 3], "in_channels": 3, "out_channels": 2, "heads": 6, "head_dim": 2,
                "padding": [1, 0, 2, 1], "padding_mode": "reflect", "stride": [2, 1], "dilation": [1, 2],
                "bias": false, "dtype": "float32", "seed": 4}},
    {"name": "cli-sweep", "proof": "cordonnier2020.theorem1",
     "params": {"image": [5, 5], "kernel": 1, "in_channels": 2, "out_channels": 2, "heads": 2, "head_dim": 2},
     "sweep": {"alpha": [30, 60]}}
  ]
})";

template <class T>
void check_dump(const fs::path& dir, std::array<std::size_t, 3> input, std::array<std::size_t, 4> weight,
                std::array<std::size_t, 3> output, bool bias, const ConvGeometry& g) {
  INFO("dump " << dir);
  REQUIRE(fs::is_directory(dir));
  const Image<T> x = xt::load_npy<T>((dir / "input.npy").string());
  const Kernel<T> w = xt::load_npy<T>((dir / "conv_weight.npy").string());
  const Vector<T> b = xt::load_npy<T>((dir / "conv_bias.npy").string());
  const Image<T> expected = xt::load_npy<T>((dir / "expected.npy").string());
  const Image<T> actual = xt::load_npy<T>((dir / "actual.npy").string());
  CHECK(x.shape() == input);
  CHECK(w.shape() == weight);
  CHECK(b.shape(0) == weight[0]);
  CHECK(expected.shape() == output);
  CHECK(actual.shape() == output);
  const bool zero_bias = b == xt::zeros<T>({weight[0]});
  if (!bias) CHECK(zero_bias);
  // expected.npy is the convolution of the dumped input and parameters.
  const std::optional<Vector<T>> maybe_bias = bias ? std::optional<Vector<T>>(b) : std::nullopt;
  const bool reproduced = conv2d_gemm(x, w, maybe_bias, g) == expected;  // the convolution the proof runs
  CHECK(reproduced);
}

}  // namespace

TEST_CASE("run: report.json follows the contract, dumps have the right shapes", "[cli]") {
  const ScratchDir dir("cli");
  const fs::path cases = dir.path / "good.json", out = dir.path / "out", dumps = dir.path / "dumps";
  write_text(cases, good_cases);
  const Result r = run_attnconv(dir, "run " + quoted(cases) + " --out " + quoted(out) + " --dump-tensors " + quoted(dumps));
  INFO("stderr: " << r.err);
  CHECK(r.code == 0);

  const json report = read_json(out / "report.json");
  CHECK(report["schema_version"] == 1);
  CHECK(report["tool"]["name"] == "attnconv");
  CHECK(report["tool"]["version"].is_string());
  CHECK(report["tool"]["git_commit"].is_string());
  for (const char* key : {"compiler", "blas", "blas_threads", "allocator", "host", "start_time"}) {
    INFO("environment." << key);
    CHECK(report["environment"].contains(key));
  }
  const json& summary = report["summary"];
  CHECK(summary["total"] == 4);
  CHECK(summary["passed"] == 4);
  CHECK(summary["failed"] == 0);
  CHECK(summary["errored"] == 0);
  CHECK(summary["seconds"].is_number());

  REQUIRE(report["cases"].size() == 4);
  std::vector<std::string> names;
  for (const json& c : report["cases"]) {
    names.push_back(c["name"]);
    INFO("case " << c.dump());
    CHECK(c["proof"] == "cordonnier2020.theorem1");
    CHECK(c["status"] == "pass");
    CHECK(c["metrics"]["max_abs"].is_number());
    CHECK(c["metrics"]["rel_l2"].is_number());
    // No tolerance in the case: the proof's own (its finite-alpha bound) applies.
    REQUIRE(c["tolerance"].is_object());
    CHECK(c["tolerance"] == json{{"max_abs", c["metrics"]["bound"]}});
    CHECK(c["metrics"]["max_abs"].get<double>() <= c["metrics"]["bound"].get<double>());
    CHECK(c["seconds"].is_number());
    CHECK(c["message"].is_string());
    // full params: the defaults are filled in
    for (const char* key : {"image", "kernel", "padding", "padding_mode", "stride", "dilation", "bias", "alpha",
                            "dtype", "seed", "engine"})
      CHECK(c["params"].contains(key));
  }
  CHECK(names == std::vector<std::string>{"cli-k3-same", "cli-k2x3-reflect", "cli-sweep[alpha=30]", "cli-sweep[alpha=60]"});
  const json& first = report["cases"][0];
  CHECK(first["params"]["alpha"] == 60.0);
  CHECK(first["params"]["padding_mode"] == "zeros");
  CHECK(report["cases"][3]["params"]["alpha"] == 60);

  ConvGeometry same;
  same.padding = {1, 1, 1, 1};
  check_dump<double>(dumps / "cli-k3-same", {2, 6, 7}, {3, 2, 3, 3}, {3, 6, 7}, true, same);
  // H_out = (7 + 1 + 0 - 1*1 - 1) // 2 + 1 = 4,  W_out = (6 + 2 + 1 - 2*2 - 1) // 1 + 1 = 5
  ConvGeometry reflect;
  reflect.padding = {1, 0, 2, 1}, reflect.padding_mode = PaddingMode::reflect, reflect.stride = {2, 1},
  reflect.dilation = {1, 2};
  check_dump<float>(dumps / "cli-k2x3-reflect", {3, 7, 6}, {2, 3, 2, 3}, {2, 4, 5}, false, reflect);
  check_dump<double>(dumps / "cli-sweep[alpha=30]", {2, 5, 5}, {2, 2, 1, 1}, {2, 5, 5}, true, {});
  check_dump<double>(dumps / "cli-sweep[alpha=60]", {2, 5, 5}, {2, 2, 1, 1}, {2, 5, 5}, true, {});

  SECTION("same case + seed => bit-identical report numbers and dumps") {
    const fs::path out2 = dir.path / "out2", dumps2 = dir.path / "dumps2";
    REQUIRE(run_attnconv(dir, "run " + quoted(cases) + " --out " + quoted(out2) + " --dump-tensors " + quoted(dumps2)).code == 0);
    const json again = read_json(out2 / "report.json");
    for (std::size_t k = 0; k < 4; ++k) CHECK(again["cases"][k]["metrics"] == report["cases"][k]["metrics"]);
    for (const char* file : {"input.npy", "expected.npy", "actual.npy", "conv_weight.npy", "conv_bias.npy"})
      CHECK(read_text(dumps2 / "cli-k2x3-reflect" / file) == read_text(dumps / "cli-k2x3-reflect" / file));
  }

  SECTION("a bad case file: exit 2, file and key named, the old report left byte for byte") {
    const std::string before = read_text(out / "report.json");
    const auto bad = [&](const std::string& file, const std::string& content, const std::string& key) {
      write_text(dir.path / file, content);
      const Result b = run_attnconv(dir, "run " + quoted(dir.path / file) + " --out " + quoted(out));
      INFO("stderr: " << b.err);
      CHECK(b.code == 2);
      CHECK(b.err.find(file) != std::string::npos);
      CHECK(b.err.find(key) != std::string::npos);
      CHECK(read_text(out / "report.json") == before);
      CHECK(std::distance(fs::directory_iterator(out), fs::directory_iterator{}) == 1);  // no temporary left
    };
    bad("typo.json",
        R"({"cases": [{"name": "t", "proof": "cordonnier2020.theorem1",
            "params": {"image": 6, "kernal": 3, "in_channels": 1, "out_channels": 1, "heads": 9, "head_dim": 1}}]})",
        "key 'params.kernal'");
    bad("type.json",
        R"({"cases": [{"name": "t", "proof": "cordonnier2020.theorem1",
            "params": {"image": 6, "kernel": 3, "in_channels": 1, "out_channels": 1, "heads": "nine", "head_dim": 1}}]})",
        "key 'params.heads'");
    bad("sweep.json",
        R"({"cases": [{"name": "t", "proof": "cordonnier2020.theorem1",
            "params": {"image": 6, "kernel": 3, "in_channels": 1, "out_channels": 1, "heads": 9, "head_dim": 1},
            "sweep": {"alpha": [1, -2]}}]})",
        "key 'sweep.alpha'");
    bad("geometry.json",
        R"({"cases": [{"name": "t", "proof": "cordonnier2020.theorem1",
            "params": {"image": 2, "kernel": 5, "in_channels": 1, "out_channels": 1, "heads": 25, "head_dim": 1}}]})",
        "key 'params.kernel'");
    bad("malformed.json", R"({"cases": [ {"name": "t", )", "malformed JSON");
    // one bad case among good ones: nothing runs
    json mixed = json::parse(good_cases);
    mixed["cases"].push_back({{"name", "bad"}, {"proof", "cordonnier2020.theorem2"}, {"params", json::object()}});
    bad("mixed.json", mixed.dump(), "case 'bad': key 'proof'");
    const Result missing = run_attnconv(dir, "run " + quoted(dir.path / "nothing-here.json") + " --out " + quoted(out));
    CHECK(missing.code == 2);
    CHECK(missing.err.find("nothing-here.json") != std::string::npos);
    CHECK(read_text(out / "report.json") == before);
  }
}

TEST_CASE("run: a failing case gives exit 1 and status fail", "[cli]") {
  const ScratchDir dir("cli");
  const fs::path cases = dir.path / "fails.json", out = dir.path / "out";
  write_text(cases, R"({"cases": [
    {"name": "holds", "proof": "cordonnier2020.theorem1",
     "params": {"image": [5, 6], "kernel": 3, "in_channels": 2, "out_channels": 2, "heads": 9, "head_dim": 2, "padding": 1}},
    {"name": "alpha2", "proof": "cordonnier2020.theorem1",
     "params": {"image": [5, 6], "kernel": 3, "in_channels": 2, "out_channels": 2, "heads": 9, "head_dim": 2,
                "padding": 1, "alpha": 2},
     "tolerance": {"rel_l2": 1e-30}}
  ]})");
  const Result r = run_attnconv(dir, "run " + quoted(cases) + " --out " + quoted(out));
  INFO("stderr: " << r.err);
  CHECK(r.code == 1);
  const json report = read_json(out / "report.json");
  CHECK(report["summary"]["total"] == 2);
  CHECK(report["summary"]["passed"] == 1);
  CHECK(report["summary"]["failed"] == 1);
  CHECK(report["summary"]["errored"] == 0);
  const json& failed = report["cases"][1];
  CHECK(failed["name"] == "alpha2");
  CHECK(failed["status"] == "fail");
  CHECK(failed["tolerance"] == json{{"rel_l2", 1e-30}});
  CHECK(failed["metrics"]["rel_l2"].get<double>() > 1e-3);  // alpha = 2 is far from the limit
  CHECK(failed["metrics"]["alpha"] == 2.0);
  CHECK(failed["message"].get<std::string>().find("rel_l2") != std::string::npos);
  CHECK(!fs::exists(dir.path / "reports"));  // --out was honoured
}

TEST_CASE("list, proofs and --filter", "[cli]") {
  const ScratchDir dir("cli");
  const fs::path cases = dir.path / "good.json";
  write_text(cases, good_cases);

  const Result listed = run_attnconv(dir, "list " + quoted(cases));
  CHECK(listed.code == 0);
  std::istringstream lines(listed.out);
  std::vector<std::string> names;
  for (std::string line; std::getline(lines, line);) names.push_back(line.substr(0, line.find('\t')));
  CHECK(names == std::vector<std::string>{"cli-k3-same", "cli-k2x3-reflect", "cli-sweep[alpha=30]", "cli-sweep[alpha=60]"});

  const Result filtered_list = run_attnconv(dir, "list " + quoted(cases) + " --filter 'cli-sweep*'");
  CHECK(filtered_list.code == 0);
  CHECK(std::count(filtered_list.out.begin(), filtered_list.out.end(), '\n') == 2);

  const Result proofs = run_attnconv(dir, "proofs");
  CHECK(proofs.code == 0);
  CHECK(proofs.out.find("cordonnier2020.theorem1") != std::string::npos);
  CHECK(proofs.out.find("Theorem 1") != std::string::npos);

  const fs::path out = dir.path / "out";
  const Result run = run_attnconv(dir, "run " + quoted(cases) + " --out " + quoted(out) + " --filter 'cli-k*'");
  INFO("stderr: " << run.err);
  CHECK(run.code == 0);
  const json report = read_json(out / "report.json");
  CHECK(report["summary"]["total"] == 2);
  REQUIRE(report["cases"].size() == 2);
  CHECK(report["cases"][0]["name"] == "cli-k3-same");
  CHECK(report["cases"][1]["name"] == "cli-k2x3-reflect");

  const Result none = run_attnconv(dir, "run " + quoted(cases) + " --out " + quoted(dir.path / "none") + " --filter 'nope*'");
  CHECK(none.code == 2);
  CHECK(!fs::exists(dir.path / "none" / "report.json"));

  CHECK(run_attnconv(dir, "").code == 2);                   // no subcommand
  CHECK(run_attnconv(dir, "run --no-such-flag").code == 2);  // bad usage
}

TEST_CASE("run: weights loaded from .npy files; unknown or missing ones are bad input", "[cli]") {
  const ScratchDir dir("cli");
  const Image<double> x = xt::reshape_view(xt::arange<double>(2 * 5 * 6) / 7.0 - 4.0, {2, 5, 6});
  const Kernel<double> w = xt::reshape_view(xt::arange<double>(3 * 2 * 3 * 3) / 11.0 - 2.0, {3, 2, 3, 3});
  const Vector<double> b{0.5, -1.0, 2.0};
  fs::create_directories(dir.path / "npy");
  xt::dump_npy((dir.path / "npy" / "x.npy").string(), x);
  xt::dump_npy((dir.path / "npy" / "w.npy").string(), w);
  xt::dump_npy((dir.path / "npy" / "b.npy").string(), b);
  const auto case_file = [&](const std::string& file, const json& weights) {
    const json document = {
        {"cases",
         {{{"name", "loaded"},
           {"proof", "cordonnier2020.theorem1"},
           {"params",
            {{"image", {5, 6}}, {"kernel", 3}, {"in_channels", 2}, {"out_channels", 3}, {"heads", 9}, {"head_dim", 3},
             {"padding", 1}}},
           {"weights", weights}}}}};
    write_text(dir.path / file, document.dump(2));
    return dir.path / file;
  };

  const fs::path out = dir.path / "out", dumps = dir.path / "dumps";
  const fs::path good = case_file("good.json", {{"input", "npy/x.npy"}, {"conv_weight", "npy/w.npy"}, {"conv_bias", "npy/b.npy"}});
  const Result r = run_attnconv(dir, "run " + quoted(good) + " --out " + quoted(out) + " --dump-tensors " + quoted(dumps));
  INFO("stderr: " << r.err);
  REQUIRE(r.code == 0);
  // paths are relative to the case file: the dumps hold exactly those tensors
  CHECK(read_text(dumps / "loaded" / "input.npy") == read_text(dir.path / "npy" / "x.npy"));
  CHECK(read_text(dumps / "loaded" / "conv_weight.npy") == read_text(dir.path / "npy" / "w.npy"));
  CHECK(read_text(dumps / "loaded" / "conv_bias.npy") == read_text(dir.path / "npy" / "b.npy"));
  ConvGeometry g;
  g.padding = {1, 1, 1, 1};
  const Image<double> expected = xt::load_npy<double>((dumps / "loaded" / "expected.npy").string());
  const bool reproduced = conv2d_gemm(x, w, std::optional<Vector<double>>(b), g) == expected;
  CHECK(reproduced);

  const std::string before = read_text(out / "report.json");
  const auto bad = [&](const fs::path& file, const std::string& key) {
    const Result b = run_attnconv(dir, "run " + quoted(file) + " --out " + quoted(out));
    INFO("stderr: " << b.err);
    CHECK(b.code == 2);
    CHECK(b.err.find(file.filename().string()) != std::string::npos);
    CHECK(b.err.find("key '" + key + "'") != std::string::npos);
    CHECK(read_text(out / "report.json") == before);
  };
  // a typo must not silently fall back to random numbers
  bad(case_file("typo.json", {{"inptu", "npy/x.npy"}}), "weights.inptu");
  bad(case_file("missing.json", {{"input", "npy/nothing.npy"}}), "weights.input");
  bad(case_file("number.json", {{"conv_bias", 3}}), "weights.conv_bias");
}
