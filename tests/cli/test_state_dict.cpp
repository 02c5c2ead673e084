// Real layers in (docs/cases.md): a PyTorch state_dict saved with
// numpy.savez read under a module prefix, batch inputs, an outside
// implementation's reference_output, the provenance of every tensor, and no
// silent defaults. Fixtures: tests/fixtures/make_state_dict_fixtures.py.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "cli_support.hpp"
#include "io/npy_check.hpp"
#include "io/npz.hpp"
#include "io/sha256.hpp"

namespace {

using namespace attnconv::testing;
using json = nlohmann::json;

const std::string fixtures = std::string(ATTNCONV_SOURCE_DIR) + "/tests/fixtures/state_dict/";

json theorem1_conv1() {
  return {{"name", "t1"},
          {"proof", "cordonnier2020.theorem1"},
          {"params", {{"image", {7, 8}}, {"kernel", 3}, {"in_channels", 3}, {"out_channels", 4}, {"heads", 9},
                      {"head_dim", 4}, {"padding", 1}, {"stride", 2}}},
          {"weights", fixtures + "net.npz"},
          {"weights_prefix", "layer1.0.conv1."}};
}

json acmix_stage0() {
  return {{"name", "m1"},
          {"proof", "acmix2022.module"},
          {"params", {{"image", {6, 7}}, {"in_channels", 4}, {"out_channels", 4}, {"heads", 2}, {"kernel_att", 3}, {"kernel_conv", 3}}},
          {"weights", fixtures + "acmix.npz"},
          {"weights_prefix", "stage.0."}};
}

json patched(json base, const json& patch) {
  base.merge_patch(patch);
  return base;
}

struct Run {
  CliResult result;
  json report;
};

// `attnconv run` of one case file holding `cases`, with more `args`.
Run run_cases(const ScratchDir& dir, const std::vector<json>& cases, const std::string& args = "") {
  json file = {{"cases", json::array()}};
  for (const auto& c : cases) file["cases"].push_back(c);
  write_text(dir.path / "cases.json", file.dump(2));
  Run run{run_cli("run " + quoted(dir.path / "cases.json") + " --quiet --out " + quoted(dir.path / "out") + " " + args), {}};
  if (fs::exists(dir.path / "out" / "report.json")) run.report = json::parse(read_text(dir.path / "out" / "report.json"));
  return run;
}

std::vector<std::size_t> npy_shape(const fs::path& path) {
  std::ifstream stream(path, std::ios::binary);
  return attnconv::read_npy_header(stream).shape;
}

}  // namespace

TEST_CASE("an .npz state_dict under a prefix: batch, reference_output, provenance", "[state_dict]") {
  const ScratchDir dir("state_dict_run");
  const Run run = run_cases(dir, {theorem1_conv1(), acmix_stage0()}, "--dump-tensors " + quoted(dir.path / "dump"));
  INFO(run.result.output);
  REQUIRE(run.result.code == 0);
  const json& t1 = run.report["cases"][0];
  CHECK(t1["batch"] == 2);
  CHECK(t1["metrics"]["max_abs_per_sample"].size() == 2);
  CHECK(t1["metrics"]["reference_rel_l2"].get<double>() < 1e-14);  // PyTorch's own conv2d output of the layer
  CHECK(t1["tolerance"].contains("reference_rel_l2"));
  const std::string npz_sha = attnconv::sha256_hex(read_text(fixtures + "net.npz"));
  CHECK(t1["provenance"]["conv_weight"]["entry"] == "layer1.0.conv1.weight");
  CHECK(t1["provenance"]["conv_weight"]["sha256"] == npz_sha);
  CHECK(t1["provenance"]["conv_bias"]["entry"] == "layer1.0.conv1.bias");
  CHECK(t1["provenance"]["input"]["entry"] == "input");  // read without the prefix
  CHECK(t1["provenance"]["reference_output"]["entry"] == "reference_output");
  CHECK(!t1["weights"].contains("layer1.0.bn1.weight"));  // the state_dict's other tensors are not the case's
  // Dumps keep the batch dimension; the layer's parameters have none.
  CHECK(npy_shape(dir.path / "dump" / "t1" / "input.npy") == std::vector<std::size_t>{2, 3, 7, 8});
  CHECK(npy_shape(dir.path / "dump" / "t1" / "expected.npy") == std::vector<std::size_t>{2, 4, 4, 4});
  CHECK(npy_shape(dir.path / "dump" / "t1" / "conv_weight.npy") == std::vector<std::size_t>{4, 3, 3, 3});

  const json& m1 = run.report["cases"][1];
  CHECK(m1["params"]["rates"] == json::array({0.25, 0.75}));  // as loaded, not the default [0.5, 0.5]
  CHECK(m1["params"]["dep_init"] == "loaded");
  CHECK(m1["metrics"]["reference_rel_l2"].get<double>() < 1e-14);  // the module's own forward
  CHECK(m1["provenance"]["dep_conv.weight"]["entry"] == "stage.0.dep_conv.weight");
}

TEST_CASE("a batch of sequences (N, C, L) for the 1D theorem", "[state_dict]") {
  const ScratchDir dir("state_dict_1d");
  const json c = {{"name", "t1d"},
                  {"proof", "cordonnier2020.theorem1_1d"},
                  {"params", {{"length", 9}, {"kernel", 3}, {"in_channels", 2}, {"out_channels", 3}, {"heads", 3},
                              {"head_dim", 3}, {"padding", 2}, {"dilation", 2}}},
                  {"weights", fixtures + "conv1d.npz"}};
  const Run run = run_cases(dir, {c});
  INFO(run.result.output);
  REQUIRE(run.result.code == 0);
  CHECK(run.report["cases"][0]["batch"] == 3);
  CHECK(run.report["cases"][0]["metrics"]["max_abs_per_sample"].size() == 3);
  CHECK(run.report["cases"][0]["metrics"]["reference_rel_l2"].get<double>() < 1e-14);
  // A tolerance on the reference needs one.
  const Run refused = run_cases(dir, {patched(small_theorem1_case(), {{"tolerance", {{"reference_rel_l2", 1e-9}}}})});
  CHECK(refused.result.code == 2);
  CHECK(refused.result.output.find("key 'tolerance.reference_rel_l2': the case gives no reference_output") != std::string::npos);
}

TEST_CASE("the .npz reader: entries, deflate, and a corrupt archive refused", "[state_dict][npz]") {
  const auto entries = attnconv::read_npz_directory(fixtures + "net_compressed.npz");
  CHECK(std::count_if(entries.begin(), entries.end(), [](const auto& e) { return e.method == 8; }) > 0);
  const auto stored = attnconv::read_npz_directory(fixtures + "net.npz");
  REQUIRE(stored.size() == entries.size());
  for (std::size_t k = 0; k < stored.size(); ++k)
    CHECK(attnconv::read_npz_entry(fixtures + "net.npz", stored[k]) ==
          attnconv::read_npz_entry(fixtures + "net_compressed.npz", entries[k]));

  const ScratchDir dir("state_dict_corrupt");
  const std::string bytes = read_text(fixtures + "net.npz");
  const auto refused = [&](const std::string& file_bytes, const std::string& message) {
    write_text(dir.path / "bad.npz", file_bytes);
    json c = patched(theorem1_conv1(), {{"weights", (dir.path / "bad.npz").string()}});
    const Run run = run_cases(dir, {c});
    INFO(run.result.output);
    CHECK(run.result.code == 2);
    CHECK(run.result.output.find("bad.npz") != std::string::npos);
    CHECK(run.result.output.find(message) != std::string::npos);
    CHECK(!fs::exists(dir.path / "out" / "report.json"));
  };
  refused(bytes.substr(0, bytes.size() / 2), "no end of central directory record");
  refused("", "shorter than a zip end record");
  const auto weight = std::find_if(stored.begin(), stored.end(), [](const auto& e) { return e.name == "layer1.0.conv1.weight"; });
  REQUIRE(weight != stored.end());
  std::string flipped = bytes;
  flipped[weight->local_header_offset + weight->compressed_size] ^= 0x55;  // a value in the entry's data
  refused(flipped, "entry 'layer1.0.conv1.weight' fails its CRC-32 check");
  std::string method = bytes;
  const std::size_t directory = method.find("PK\x01\x02");
  method[directory + 10] = 12;  // bzip2
  refused(method, "compressed with zip method 12");
}

TEST_CASE("no silent defaults: a module loaded in part, a wrong prefix, contradicting params", "[state_dict]") {
  const ScratchDir dir("state_dict_defaults");
  const auto refused = [&](const json& c, const std::vector<std::string>& parts) {
    const Run run = run_cases(dir, {c});
    INFO(run.result.output);
    CHECK(run.result.code == 2);
    for (const auto& part : parts) CHECK(run.result.output.find(part) != std::string::npos);
  };
  // A prefix that names no module: the nearest names and the prefixes present.
  refused(patched(theorem1_conv1(), {{"weights_prefix", "layer1.0.conv3."}}),
          {"case 't1'", "key 'weights_prefix'", "'layer1.0.conv3.weight'", "nearest: 'layer1.0.conv1.weight'",
           "prefixes in the file: '', 'layer1.0.bn1.', 'layer1.0.conv1.', 'layer1.0.conv2.', 'stem.'"});
  // layer1.0.conv2 has no bias: "bias": true would draw one from the seed.
  json conv2 = patched(theorem1_conv1(), {{"params", {{"in_channels", 4}, {"stride", 1}}}, {"weights", nullptr}, {"weights_prefix", nullptr}});
  conv2["weights"] = {{"conv_weight", {{"file", fixtures + "net.npz"}, {"entry", "layer1.0.conv2.weight"}}}};
  conv2["params"]["image"] = {5, 5};
  refused(conv2, {"key 'weights'", "loads conv_weight but not conv_bias", "\"weights_partial\": true", "\"bias\": false"});
  conv2["params"]["bias"] = false;
  {
    const Run run = run_cases(dir, {conv2});
    INFO(run.result.output);
    CHECK(run.result.code == 0);
    CHECK(run.report["cases"][0]["provenance"]["input"].contains("drawn_from_seed"));
  }
  // ACmix without dep_conv.weight: refused, or drawn and reported with "weights_partial".
  json acmix = acmix_stage0();
  acmix.erase("weights_prefix");
  acmix["weights"] = json::object();
  for (const char* key : {"rate1", "rate2", "conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "conv3.weight",
                          "conv3.bias", "conv_p.weight", "conv_p.bias", "fc.weight"})
    acmix["weights"][key] = {{"file", fixtures + "acmix.npz"}, {"entry", std::string("stage.0.") + key}};
  refused(acmix, {"case 'm1'", "key 'weights'", "but not dep_conv.weight", "the module is loaded in part"});
  acmix["weights_partial"] = true;
  {
    const Run run = run_cases(dir, {acmix});
    INFO(run.result.output);
    CHECK(run.result.code == 0);
    CHECK(run.report["cases"][0]["weights_drawn"] == json::array({"dep_conv.weight"}));
    CHECK(run.report["cases"][0]["params"]["dep_init"] == "shift");
    CHECK(run.report["cases"][0]["params"]["rates"] == json::array({0.25, 0.75}));
  }
  // Without rate1 and rate2 the defaults 0.5, 0.5 would be used silently.
  json no_rates = acmix;
  no_rates.erase("weights_partial");
  no_rates["weights"].erase("rate1");
  no_rates["weights"].erase("rate2");
  no_rates["weights"]["dep_conv.weight"] = {{"file", fixtures + "acmix.npz"}, {"entry", "stage.0.dep_conv.weight"}};
  refused(no_rates, {"key 'weights'", "but not rate1, rate2", "\"weights_partial\": true"});
  // "bias": false for a layer whose bias is in the state_dict: checking it without would check another layer.
  refused(patched(theorem1_conv1(), {{"params", {{"bias", false}}}}),
          {"case 't1'", "key 'params.bias'", "\"layer1.0.conv1.bias\"", "set \"bias\": true"});
  // A stride the layer did not have: its output has another shape.
  refused(patched(theorem1_conv1(), {{"params", {{"stride", 1}}}}),
          {"key 'weights.reference_output'", "has shape (2, 4, 4, 4), expected (2, 4, 7, 8)"});
  // A params value that contradicts the loaded tensors.
  refused(patched(acmix_stage0(), {{"params", {{"rates", {0.5, 0.5}}}}}),
          {"key 'params.rates'", "[0.5,0.5] contradicts the loaded tensors, which give [0.25,0.75]"});
  refused(patched(acmix_stage0(), {{"params", {{"dep_init", "shift"}}}}),
          {"key 'params.dep_init'", "contradicts the loaded tensors"});
  refused(patched(acmix_stage0(), {{"params", {{"dep_init", "loaded"}}}, {"weights", nullptr}, {"weights_prefix", nullptr}}),
          {"key 'params.dep_init'", "\"loaded\""});
  // An unbatched reference_output for a batch input; a weights_prefix without an .npz.
  refused(patched(theorem1_conv1(), {{"weights_prefix", nullptr}, {"weights", {{"input", {{"file", fixtures + "net.npz"}, {"entry", "input"}}},
                                                                                 {"reference_output", {{"file", fixtures + "net.npz"}, {"entry", "layer1.0.conv1.weight"}}}}}}),
          {"key 'weights.reference_output'", "expected (2, 4, 4, 4)"});
  refused(patched(small_theorem1_case(), {{"weights_prefix", "a."}}), {"key 'weights_prefix'", "needs \"weights\""});
  refused(patched(conv2, {{"weights", {{"conv_weight", {{"entry", "layer1.0.conv2.weigth"}}}}}}),
          {"key 'weights.conv_weight'", "has no entry 'layer1.0.conv2.weigth' (did you mean 'layer1.0.conv2.weight'?)"});
}

TEST_CASE("a reference_output the parameters do not reproduce fails the case", "[state_dict]") {
  const ScratchDir dir("state_dict_reference");
  // Same shapes, another padding mode: only the outside output can tell.
  const Run run = run_cases(dir, {patched(theorem1_conv1(), {{"params", {{"padding_mode", "reflect"}}}})});
  INFO(run.result.output);
  CHECK(run.result.code == 1);
  const json& c = run.report["cases"][0];
  CHECK(c["status"] == "fail");
  CHECK(c["metrics"]["reference_rel_l2"].get<double>() > 1e-3);
  CHECK(c["message"].get<std::string>().find("disagrees with the case's reference_output") != std::string::npos);
  // ACmix with another attention window: every tensor fits, the module output does not.
  const Run acmix = run_cases(dir, {patched(acmix_stage0(), {{"params", {{"kernel_att", 5}}}})});
  INFO(acmix.result.output);
  CHECK(acmix.result.code == 1);
  CHECK(acmix.report["cases"][0]["metrics"]["reference_rel_l2"].get<double>() > 1e-3);
}

TEST_CASE("attnconv --version prints the version and commit of the report's tool section", "[state_dict][cli]") {
  const CliResult result = run_cli("--version");
  CHECK(result.code == 0);
  CHECK(result.output.rfind("attnconv ", 0) == 0);
  CHECK(result.output.find("(git ") != std::string::npos);
}

TEST_CASE("a batch reports its worst reference distance, whichever sample is worst by the claim", "[state_dict]") {
  const ScratchDir dir("state_dict_batch_reference");
  // Sample 1's reference output moved by 1e-5 relative (within a tolerance of 1e-3, so every sample passes);
  // the claim's max_abs ties, so sample 0 is the worst by the claim.
  const std::string npz = fixtures + "net.npz";
  for (const auto& entry : attnconv::read_npz_directory(npz))
    if (entry.name == "reference_output") write_text(dir.path / "reference.npy", attnconv::read_npz_entry(npz, entry));
  xt::xarray<double> reference = xt::load_npy<double>((dir.path / "reference.npy").string());
  xt::view(reference, 1) *= 1 + 1e-5;
  xt::dump_npy((dir.path / "moved.npy").string(), reference);
  json c = theorem1_conv1();
  c.erase("weights_prefix");
  c["weights"] = {{"input", {{"file", npz}, {"entry", "input"}}},
                  {"conv_weight", {{"file", npz}, {"entry", "layer1.0.conv1.weight"}}},
                  {"conv_bias", {{"file", npz}, {"entry", "layer1.0.conv1.bias"}}},
                  {"reference_output", (dir.path / "moved.npy").string()}};
  c["tolerance"] = {{"reference_rel_l2", 1e-3}};
  const Run run = run_cases(dir, {c});
  INFO(run.result.output);
  REQUIRE(run.result.code == 0);
  const json& m = run.report["cases"][0]["metrics"];
  CHECK(m["reference_rel_l2"].get<double>() > 5e-6);  // sample 1's, not sample 0's ~1e-16
  CHECK(m["reference_rel_l2"].get<double>() < 2e-5);
}
