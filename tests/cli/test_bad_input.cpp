// Every kind of bad input, as one table: each row is run
// through the attnconv program and must give exit code 2, a message naming
// the file, the case and the key, leave an earlier report untouched and
// start no journal. Set ATTNCONV_BAD_INPUT_LOG=FILE to get every message.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"

namespace {

using namespace attnconv::testing;
using json = nlohmann::json;

const json base_case = small_theorem1_case();

// `base` with `patch` applied (RFC 7396: null removes a key).
json patched(json base, const json& patch) {
  if (!patch.is_null()) base.merge_patch(patch);
  return base;
}

// A case file holding the base case with `patch` applied.
std::string case_file(const json& patch) { return json{{"cases", {patched(base_case, patch)}}}.dump(2); }

std::string case_file_text(const std::string& case_text) { return "{\"cases\": [" + case_text + "]}"; }

struct BadInput {
  std::string label;
  std::string file_text;            // written to DIR/bad.json
  std::vector<std::string> expect;  // parts of the message
  std::string args = "";            // more CLI arguments; "FILE" is replaced by the case file
  std::function<void(const fs::path&)> setup = nullptr;  // more files in DIR
};

std::string doubles(std::size_t n, double value = 0.5) { return raw_bytes(std::vector<double>(n, value)); }

json with_input(const std::string& file) { return {{"weights", {{"input", file}}}}; }

std::vector<BadInput> bad_inputs() {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> with_nan(72, 0.5), with_inf(72, 0.5);
  with_nan[5] = nan, with_inf[70] = -inf;
  return {
      // --- the file as JSON
      {"malformed JSON (line and column)", "{\n  \"cases\": [\n    {\"name\": \"c1\" \"proof\": 1}\n  ]\n}",
       {"bad.json", "malformed JSON at line 3, column 25", "case 'c1'", "key 'name'", "expected '}'"}},
      {"empty file", "", {"bad.json", "malformed JSON", "line 1, column 1"}},
      {"bytes that are not UTF-8", "{\"cases\": [{\"name\": \"c\xff\xfe\"}]}",
       {"bad.json", "malformed JSON at line 1, column 23", "ill-formed UTF-8", "\"c\\xFF'"}},
      {"trailing garbage", case_file({}) + " }", {"bad.json", "malformed JSON", "line"}},
      {"top level not an object", "[1, 2]", {"bad.json", "top level must be a JSON object"}},
      {"top level a string", "\"cases\"", {"bad.json", "top level must be a JSON object"}},
      {"unknown top-level key", "{\"case\": []}", {"bad.json", "key 'case'", "did you mean 'cases'"}},
      {"cases not a list", "{\"cases\": {}}", {"bad.json", "key 'cases'", "must be a list"}},
      {"case not an object", "{\"cases\": [5]}", {"bad.json", "case #1", "must be a JSON object"}},
      // --- names and proofs
      {"missing name", case_file({{"name", nullptr}}), {"bad.json", "case #1", "key 'name'", "missing"}},
      {"name not a string", case_file({{"name", 5}}), {"bad.json", "key 'name'", "non-empty string"}},
      {"empty name", case_file({{"name", ""}}), {"bad.json", "key 'name'", "non-empty string"}},
      {"name with a slash", case_file({{"name", "a/b"}}), {"bad.json", "case 'a/b'", "key 'name'", "'/'"}},
      {"name with a NUL and an escape sequence", case_file({{"name", std::string("x\0y\x1b[2J", 7)}}),
       {"bad.json", "case 'x\\u0000y\\u001b[2J'", "key 'name'", "NUL character"}},
      {"name '..'", case_file({{"name", ".."}}), {"bad.json", "case '..'", "key 'name'", "must not be '.' or '..'"}},
      {"unknown proof of 10 MB", case_file({{"proof", std::string(10 << 20, 'x')}}),
       {"bad.json", "case 'c1'", "key 'proof'", "unknown proof 'xxxx", "...'"}},
      {"name of 10 MB", case_file({{"name", std::string(10 << 20, 'n')}}),
       {"bad.json", "case 'nnnn", "...': key 'name'", "at most 1024 characters, got 10485760"}},
      {"name of 1025 characters (2 bytes each)", case_file({{"name", [] { std::string n; for (int k = 0; k < 1025; ++k) n += "\xC3\xA9"; return n; }()}}),
       {"bad.json", "key 'name'", "at most 1024 characters, got 1025"}},
      {"description not a string", case_file({{"description", 5}}), {"bad.json", "case 'c1'", "key 'description'", "must be a string"}},
      // --- the case file itself
      {"case file of 2 GB (sparse)", "", {"bad.json", "larger than 64 MiB"}, "",
       [](const fs::path& dir) { fs::resize_file(dir / "bad.json", std::uintmax_t(2) << 30); }},
      {"case file is a FIFO (no writer)", "", {"bad.json", "not a regular file"}, "",
       [](const fs::path& dir) { fs::remove(dir / "bad.json"), ::mkfifo((dir / "bad.json").c_str(), 0600); }},
      {"case file is a loop of symbolic links", "", {"bad.json", "cannot read", "Too many levels of symbolic links"}, "",
       [](const fs::path& dir) { fs::remove(dir / "bad.json"), fs::create_symlink("bad.json", dir / "bad.json"); }},
      {"case file is a folder without case files", "", {"bad.json", "a folder without case files"}, "",
       [](const fs::path& dir) { fs::remove(dir / "bad.json"), fs::create_directories(dir / "bad.json" / "sub"); }},
      {"unknown proof", case_file({{"proof", "cordonier2020.theorem1"}}),
       {"bad.json", "case 'c1'", "key 'proof'", "unknown proof", "did you mean 'cordonnier2020.theorem1'",
        "known proofs: "}},
      {"proof not a string", case_file({{"proof", 1}}), {"bad.json", "case 'c1'", "key 'proof'", "must be a string"}},
      {"unknown case key", case_file({{"tolerence", {{"rel_l2", 1e-9}}}}),
       {"bad.json", "case 'c1'", "key 'tolerence'", "unknown key", "did you mean 'tolerance'"}},
      {"unknown parameter", case_file({{"params", {{"kernal", 3}}}}),
       {"bad.json", "case 'c1'", "key 'params.kernal'", "did you mean 'kernel'"}},
      {"missing required parameter", case_file({{"params", {{"image", nullptr}}}}),
       {"bad.json", "case 'c1'", "key 'params.image'", "missing"}},
      // --- wrong types
      {"params not an object", case_file({{"params", json::array()}}), {"bad.json", "case 'c1'", "key 'params'", "object"}},
      {"image a string", case_file({{"params", {{"image", "12"}}}}),
       {"bad.json", "case 'c1'", "key 'params.image'", "integer or a pair"}},
      {"image of three", case_file({{"params", {{"image", {4, 4, 4}}}}}),
       {"bad.json", "case 'c1'", "key 'params.image'", "integer or a pair"}},
      {"heads a float", case_file({{"params", {{"heads", 9.5}}}}),
       {"bad.json", "case 'c1'", "key 'params.heads'", "must be an integer"}},
      {"heads 9.0", case_file({{"params", {{"heads", 9.0}}}}),
       {"bad.json", "case 'c1'", "key 'params.heads'", "must be an integer"}},
      {"bias a string", case_file({{"params", {{"bias", "yes"}}}}),
       {"bad.json", "case 'c1'", "key 'params.bias'", "true or false"}},
      {"alpha a string", case_file({{"params", {{"alpha", "big"}}}}),
       {"bad.json", "case 'c1'", "key 'params.alpha'", "finite number"}},
      {"padding a bad string", case_file({{"params", {{"padding", "full"}}}}),
       {"bad.json", "case 'c1'", "key 'params.padding'", "\"same\" or \"valid\""}},
      {"padding of three", case_file({{"params", {{"padding", {1, 1, 1}}}}}),
       {"bad.json", "case 'c1'", "key 'params.padding'", "[top, bottom, left, right]"}},
      {"tolerance a string", case_file({{"tolerance", {{"rel_l2", "1e-3"}}}}),
       {"bad.json", "case 'c1'", "key 'tolerance.rel_l2'", "finite number >= 0"}},
      {"tolerance negative", case_file({{"tolerance", {{"max_abs", -1}}}}),
       {"bad.json", "case 'c1'", "key 'tolerance.max_abs'", "finite number >= 0"}},
      {"tolerance unknown metric", case_file({{"tolerance", {{"max_ab", 1e-9}}}}),
       {"bad.json", "case 'c1'", "key 'tolerance.max_ab'", "did you mean 'max_abs'",
        "its error metrics: max_abs, rel_l2, reference_max_abs, reference_rel_l2, weight_distance"}},
      {"tolerance on a metric that is not an error", case_file({{"tolerance", {{"alpha", 100}}}}),
       {"bad.json", "case 'c1'", "key 'tolerance.alpha'", "'alpha' is not an error metric of cordonnier2020.theorem1",
        "a tolerance may name only its error metrics: max_abs, rel_l2, reference_max_abs, reference_rel_l2, weight_distance"}},
      {"tolerance on a string metric", case_file({{"tolerance", {{"engine", 0}}}}),
       {"bad.json", "case 'c1'", "key 'tolerance.engine'", "not an error metric"}},
      {"expect not hold/fail", case_file({{"expect", "maybe"}}),
       {"bad.json", "case 'c1'", "key 'expect'", "\"hold\" or \"fail\""}},
      {"expect not a string", case_file({{"expect", true}}), {"bad.json", "case 'c1'", "key 'expect'", "\"hold\" or \"fail\""}},
      {"weights a string that is not an .npz", case_file({{"weights", "x.npy"}}),
       {"bad.json", "case 'c1'", "key 'weights'", "a string names an .npz file", "one per tensor"}},
      {"weights neither a string nor an object", case_file({{"weights", 3}}),
       {"bad.json", "case 'c1'", "key 'weights'", "an object of tensor name -> .npy path"}},
      {"tolerance on an unknown metric of 2 MB", case_file({{"tolerance", {{std::string(2 << 20, 'k'), 1}}}}),
       {"bad.json", "case 'c1'", "key 'tolerance.kkk", "reports no metric 'kkk"}},
      {"weights path of 10 KB", case_file(with_input(std::string(10000, 'p'))),
       {"bad.json", "case 'c1'", "key 'weights.input'", "a path is at most 4095 bytes"}},
      {"weights path not a string", case_file({{"weights", {{"input", 3}}}}),
       {"bad.json", "case 'c1'", "key 'weights.input'", "path (string)"}},
      // --- impossible values
      {"image zero", case_file({{"params", {{"image", {0, 6}}}}}), {"bad.json", "case 'c1'", "key 'params.image'", ">= 1"}},
      {"image negative", case_file({{"params", {{"image", {6, -3}}}}}), {"bad.json", "case 'c1'", "key 'params.image'", ">= 1"}},
      {"in_channels zero", case_file({{"params", {{"in_channels", 0}}}}),
       {"bad.json", "case 'c1'", "key 'params.in_channels'", ">= 1"}},
      {"out_channels negative", case_file({{"params", {{"out_channels", -1}}}}),
       {"bad.json", "case 'c1'", "key 'params.out_channels'", ">= 1"}},
      {"kernel zero", case_file({{"params", {{"kernel", 0}}}}), {"bad.json", "case 'c1'", "key 'params.kernel'", ">= 1"}},
      {"stride zero", case_file({{"params", {{"stride", {1, 0}}}}}), {"bad.json", "case 'c1'", "key 'params.stride'", ">= 1"}},
      {"dilation negative", case_file({{"params", {{"dilation", -2}}}}),
       {"bad.json", "case 'c1'", "key 'params.dilation'", ">= 1"}},
      {"heads zero", case_file({{"params", {{"heads", 0}}}}), {"bad.json", "case 'c1'", "key 'params.heads'", ">= 1"}},
      {"head_dim zero", case_file({{"params", {{"head_dim", 0}}}}),
       {"bad.json", "case 'c1'", "key 'params.head_dim'", ">= 1"}},
      {"seed negative", case_file({{"params", {{"seed", -1}}}}), {"bad.json", "case 'c1'", "key 'params.seed'", ">= 0"}},
      {"negative padding", case_file({{"params", {{"padding", -1}}}}),
       {"bad.json", "case 'c1'", "key 'params.padding'", ">= 0"}},
      {"negative padding in a pair", case_file({{"params", {{"padding", {1, -1}}}}}),
       {"bad.json", "case 'c1'", "key 'params.padding'", ">= 0"}},
      {"negative padding in four", case_file({{"params", {{"padding", {0, 0, 0, -2}}}}}),
       {"bad.json", "case 'c1'", "key 'params.padding'", ">= 0"}},
      {"alpha zero", case_file({{"params", {{"alpha", 0}}}}), {"bad.json", "case 'c1'", "key 'params.alpha'", "> 0"}},
      {"alpha negative", case_file({{"params", {{"alpha", -3.5}}}}), {"bad.json", "case 'c1'", "key 'params.alpha'", "> 0"}},
      {"alpha 1e999 (parses as inf)", case_file_text(R"({"name": "c1", "proof": "cordonnier2020.theorem1",
        "params": {"image": 6, "kernel": 3, "in_channels": 2, "out_channels": 3, "heads": 9, "head_dim": 3, "alpha": 1e999}})"),
       {"bad.json", "line 2, column", "case 'c1'", "key 'params.alpha'", "number overflow parsing '1e999'"}},
      {"alpha -1e999 in a sweep", case_file_text(R"({"name": "c1", "proof": "cordonnier2020.theorem1",
        "params": {"image": 6, "kernel": 3, "in_channels": 2, "out_channels": 3, "heads": 9, "head_dim": 3},
        "sweep": {"alpha": [1, -1e999]}})"),
       {"bad.json", "line 3, column", "case 'c1'", "key 'sweep.alpha[1]'", "number overflow parsing '-1e999'"}},
      {"a key repeated in one object", case_file_text(R"({"name": "c1", "proof": "cordonnier2020.theorem1",
        "params": {"image": 6, "kernel": 3, "in_channels": 2, "out_channels": 3, "heads": 9, "head_dim": 3, "heads": 4}})"),
       {"bad.json", "case 'c1'", "key 'params.heads'", "appears twice"}},
      {"image too large for int arithmetic", case_file({{"params", {{"image", {1 << 30, 6}}}}}),
       {"bad.json", "case 'c1'", "key 'params.image'", "<= 16777216"}},
      {"kernel too large", case_file({{"params", {{"kernel", 5000}}}}),
       {"bad.json", "case 'c1'", "key 'params.kernel'", "<= 4096"}},
      {"channels beyond 32 bits", case_file({{"params", {{"in_channels", 3000000000LL}}}}),
       {"bad.json", "case 'c1'", "key 'params.in_channels'", "<= 2147483647"}},
      {"unsupported dtype", case_file({{"params", {{"dtype", "float16"}}}}),
       {"bad.json", "case 'c1'", "key 'params.dtype'", "\"float32\", \"float64\""}},
      {"unsupported engine", case_file({{"params", {{"engine", "magic"}}}}),
       {"bad.json", "case 'c1'", "key 'params.engine'", "must be one of"}},
      {"unsupported padding_mode", case_file({{"params", {{"padding_mode", "mirror"}}}}),
       {"bad.json", "case 'c1'", "key 'params.padding_mode'", "must be one of"}},
      // --- sweeps and names
      {"duplicate names after sweep expansion",
       json{{"cases",
             {patched(base_case, {{"sweep", {{"alpha", {1, 2}}}}}), patched(base_case, {{"name", "c1[alpha=2]"}})}}}
           .dump(),
       {"bad.json", "case 'c1[alpha=2]'", "key 'name'", "duplicate case name"}},
      {"duplicate sweep values", case_file({{"sweep", {{"seed", {1, 1}}}}}),
       {"bad.json", "case 'c1[seed=1]'", "key 'name'", "duplicate"}},
      {"duplicate plain names", json{{"cases", {base_case, base_case}}}.dump(), {"bad.json", "case 'c1'", "duplicate"}},
      {"empty sweep list", case_file({{"sweep", {{"alpha", json::array()}}}}),
       {"bad.json", "case 'c1'", "key 'sweep.alpha'", "non-empty list"}},
      {"sweep not a list", case_file({{"sweep", {{"alpha", 5}}}}), {"bad.json", "case 'c1'", "key 'sweep.alpha'", "list"}},
      {"sweep of an unknown parameter", case_file({{"sweep", {{"alpah", {1, 2}}}}}),
       {"bad.json", "case 'c1'", "key 'sweep.alpah'", "did you mean 'alpha'"}},
      {"sweep value of a wrong type", case_file({{"sweep", {{"heads", {9, "ten"}}}}}),
       {"bad.json", "case 'c1'", "key 'sweep.heads'", "integer"}},
      {"sweep too large", case_file({{"sweep", {{"seed", std::vector<int>(400, 1)}, {"alpha", std::vector<int>(400, 1)}}}}),
       {"bad.json", "case 'c1'", "more than 100000 cases"}},
      // --- geometry and the claim
      {"receptive field exceeds the padded image", case_file({{"params", {{"image", 4}, {"kernel", 7}, {"heads", 49}, {"padding", "valid"}}}}),
       {"bad.json", "case 'c1'", "key 'params.kernel'", "receptive field 7 exceeds the padded"}},
      {"dilated receptive field exceeds", case_file({{"params", {{"image", 6}, {"dilation", 3}, {"padding", 0}}}}),
       {"bad.json", "case 'c1'", "key 'params.kernel'", "receptive field 7"}},
      {"receptive field exceeds after a sweep", case_file({{"params", {{"padding", 0}}}, {"sweep", {{"image", {6, 2}}}}}),
       {"bad.json", "case 'c1[image=2]'", "key 'params.kernel'", "receptive field"}},
      {"reflect padding too large", case_file({{"params", {{"padding", 6}, {"padding_mode", "reflect"}}}}),
       {"bad.json", "case 'c1'", "key 'params.padding'", "reflect"}},
      {"same padding with stride 2", case_file({{"params", {{"padding", "same"}, {"stride", 2}}}}),
       {"bad.json", "case 'c1'", "key 'params.padding'", "stride 1"}},
      {"too few heads without expect fail", case_file({{"params", {{"heads", 4}}}}),
       {"bad.json", "case 'c1'", "key 'params.heads'", "heads >= the number of kernel positions = 9", "\"expect\": \"fail\""}},
      {"head_dim too small without expect fail", case_file({{"params", {{"head_dim", 1}}}}),
       {"bad.json", "case 'c1'", "key 'params.head_dim'", "head_dim >= min(in_channels, out_channels) = 2",
        "\"expect\": \"fail\""}},
      {"groups that do not divide the channels", case_file({{"params", {{"groups", 2}}}}),
       {"bad.json", "case 'c1'", "key 'params.groups'", "groups 2 must divide in_channels 2 and out_channels 3"}},
      // --- .npy files, checked when loading
      {".npy missing", case_file(with_input("missing.npy")),
       {"bad.json", "case 'c1'", "key 'weights.input'", "missing.npy", "no such file"}},
      {".npy is a folder", case_file(with_input("folder.npy")),
       {"bad.json", "case 'c1'", "key 'weights.input'", "not a regular file"},
       "", [](const fs::path& dir) { fs::create_directories(dir / "folder.npy"); }},
      {".npy not an npy file", case_file(with_input("x.npy")),
       {"bad.json", "case 'c1'", "key 'weights.input'", "x.npy", "not an .npy file"},
       "", [](const fs::path& dir) { write_text(dir / "x.npy", "hello, I am text"); }},
      {".npy header truncated", case_file(with_input("x.npy")),
       {"bad.json", "case 'c1'", "key 'weights.input'", "truncated"},
       "", [](const fs::path& dir) { write_text(dir / "x.npy", std::string("\x93NUMPY\x01\x00\x76\x00{'descr'", 16)); }},
      {".npy wrong dtype", case_file(with_input("x.npy")),
       {"bad.json", "case 'c1'", "key 'weights.input'", "dtype '<f4', expected '<f8'", "float64"},
       "", [](const fs::path& dir) { write_npy(dir / "x.npy", "<f4", {2, 6, 6}, raw_bytes(std::vector<float>(72))); }},
      {".npy integer dtype", case_file(with_input("x.npy")),
       {"bad.json", "case 'c1'", "key 'weights.input'", "dtype '<i8'"},
       "", [](const fs::path& dir) { write_npy(dir / "x.npy", "<i8", {2, 6, 6}, doubles(72)); }},
      {".npy wrong shape", case_file(with_input("x.npy")),
       {"bad.json", "case 'c1'", "key 'weights.input'", "shape (2, 6, 7), expected (2, 6, 6)"},
       "", [](const fs::path& dir) { write_npy(dir / "x.npy", "<f8", {2, 6, 7}, doubles(84)); }},
      {".npy wrong shape after a sweep", case_file(patched(with_input("x.npy"), {{"sweep", {{"image", {6, 7}}}}})),
       {"bad.json", "case 'c1[image=7]'", "key 'weights.input'", "expected (2, 7, 7)"},
       "", [](const fs::path& dir) { write_npy(dir / "x.npy", "<f8", {2, 6, 6}, doubles(72)); }},
      {".npy data truncated", case_file(with_input("x.npy")),
       {"bad.json", "case 'c1'", "key 'weights.input'", "truncated"},
       "", [](const fs::path& dir) { write_npy(dir / "x.npy", "<f8", {2, 6, 6}, doubles(71)); }},
      {".npy holds NaN", case_file(with_input("x.npy")),
       {"bad.json", "case 'c1'", "key 'weights.input'", "NaN", "index 5"},
       "", [with_nan](const fs::path& dir) { write_npy(dir / "x.npy", "<f8", {2, 6, 6}, raw_bytes(with_nan)); }},
      {".npy holds Inf", case_file(with_input("x.npy")),
       {"bad.json", "case 'c1'", "key 'weights.input'", "Inf", "index 70"},
       "", [with_inf](const fs::path& dir) { write_npy(dir / "x.npy", "<f8", {2, 6, 6}, raw_bytes(with_inf)); }},
      {".npy of another proof (ACmix) with the wrong shape",
       json{{"cases",
             {{{"name", "m1"},
               {"proof", "acmix2022.module"},
               {"params", {{"image", {7, 9}}, {"in_channels", 4}, {"out_channels", 4}, {"heads", 1}, {"kernel_att", 3}, {"kernel_conv", 5}, {"stride", 2}}},
               {"weights", {{"conv1.weight", "w.npy"}}},
               {"weights_partial", true}}}}}
           .dump(),
       {"bad.json", "case 'm1'", "key 'weights.conv1.weight'", "shape (4, 4), expected (4, 4, 1, 1)"},
       "", [](const fs::path& dir) { write_npy(dir / "w.npy", "<f8", {4, 4}, doubles(16)); }},
      {".npy unknown tensor name", case_file({{"weights", {{"conv_weights", "w.npy"}}}}),
       {"bad.json", "case 'c1'", "key 'weights.conv_weights'", "did you mean 'conv_weight'"}},
      {".npy unknown tensor name of 2 MB", case_file({{"weights", {{std::string(2 << 20, 'w'), "w.npy"}}}}),
       {"bad.json", "case 'c1'", "key 'weights.wwww", "...': unknown tensor"}},
      {".npy path with an escape sequence", case_file(with_input("x\x1b[2J.npy")),
       {"bad.json", "case 'c1'", "key 'weights.input'", "x\\u001b[2J.npy: no such file"}},
      {".npy bias without bias", case_file({{"params", {{"bias", false}}}, {"weights", {{"conv_bias", "b.npy"}}}}),
       {"bad.json", "case 'c1'", "key 'weights.conv_bias'", "loads no tensor named 'conv_bias'"}},
      // --- resources
      {"100000 x 100000 image over --max-memory", case_file({{"params", {{"image", {100000, 100000}}}}}),
       {"bad.json", "case 'c1'", "key 'params'", "estimated", "--max-memory"}},
      {"a small case over --max-memory 1K", case_file({}), {"bad.json", "case 'c1'", "estimated", "--max-memory 1.0 KiB"},
       "--max-memory 1K"},
      {"--max-memory not a size", case_file({}), {"--max-memory", "'lots' is not a size"}, "--max-memory lots"},
      {"--max-memory empty", case_file({}), {"--max-memory", "'' is not a size"}, "--max-memory ''"},
      {"--max-memory 1e300T (infinite)", case_file({}), {"--max-memory", "'1e300T' is not a size"}, "--max-memory 1e300T"},
      // --- the command line
      {"no such case file", case_file({}), {"nothere.json", "no such file"}, "NODIR/nothere.json"},
      {"no case matches --filter", case_file({}), {"no case matches", "--filter 'zz*'"}, "--filter 'zz*'"},
      {"--jobs 0", case_file({}), {"--jobs"}, "--jobs 0"},
      {"--timeout -1", case_file({}), {"--timeout", "0 < SECONDS < 1e9, got -1"}, "--timeout -1"},
      {"--timeout 1e300", case_file({}), {"--timeout", "0 < SECONDS < 1e9, got 1e300"}, "--timeout 1e300"},
      {"--timeout nan", case_file({}), {"--timeout", "got nan"}, "--timeout nan"},
      {"--timeout -0", case_file({}), {"--timeout", "got -0"}, "--timeout -0"},
      {"--timeout 0x10 (hex)", case_file({}), {"--timeout", "got 0x10"}, "--timeout 0x10"},
      {"--timeout ' 5' (a space)", case_file({}), {"--timeout", "got  5"}, "--timeout ' 5'"},
      {"--max-memory 0x10 (hex)", case_file({}), {"--max-memory", "'0x10' is not a size"}, "--max-memory 0x10"},
      {"--max-memory +1G", case_file({}), {"--max-memory", "'+1G' is not a size"}, "--max-memory +1G"},
      {"--filter of 5000 '[' matching nothing", case_file({}), {"no case matches --filter '[[[[", "...'"},
       "--filter '" + std::string(5000, '[') + "'"},
      {"unknown option", case_file({}), {"--frobnicate"}, "--frobnicate"},
      {"--resume without a journal", case_file({}), {"no journal to resume"}, "--resume"},
  };
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("every bad input exits 2 with a message naming file, case and key, and touches no report", "[bad_input]") {
  const ScratchDir dir("bad_input");
  const fs::path out = dir.path / "out", report = out / "report.json";
  const char* log_path = std::getenv("ATTNCONV_BAD_INPUT_LOG");
  std::ofstream log;
  if (log_path) log.open(log_path);
  for (const auto& row : bad_inputs()) {
    {
      INFO("row: " << row.label);
      fs::remove_all(dir.path / "case");
      const fs::path file = dir.path / "case" / "bad.json";
      write_text(file, row.file_text);
      if (row.setup) row.setup(file.parent_path());
      write_text(report, "{\"sentinel\": true}\n");
      std::string args = row.args;
      const bool names_file = contains(args, "NODIR/");
      if (names_file) args.replace(args.find("NODIR/"), 6, (dir.path / "nodir").string() + "/");
      const auto start = std::chrono::steady_clock::now();
      const CliResult result = run_cli("run " + (names_file ? std::string() : quoted(file)) + " --out " + quoted(out) + " " + args);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (log) log << row.label << "\t" << result.code << "\t" << result.output;
      INFO("output: " << result.output);
      CHECK(result.code == 2);
      for (const auto& part : row.expect) CHECK(contains(result.output, part));
      CHECK(result.output.size() < 2000);  // values quoted in part, whatever their size
      CHECK(valid_utf8(result.output));     // bytes of the input that are not UTF-8 escaped
      CHECK(read_text(report) == "{\"sentinel\": true}\n");
      CHECK_FALSE(fs::exists(out / "report.journal.jsonl"));
      CHECK(seconds < 5);  // refused before anything runs (the 100000 x 100000 image included)
    }
  }
}

TEST_CASE("a 100000 x 100000 image is refused in milliseconds", "[bad_input]") {
  const ScratchDir dir("huge_image");
  const fs::path file = dir.path / "huge.json";
  write_text(file, case_file({{"params", {{"image", {100000, 100000}}}}}));
  const auto start = std::chrono::steady_clock::now();
  const CliResult result = run_cli("run " + quoted(file) + " --out " + quoted(dir.path / "out"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(result.output);
  CHECK(result.code == 2);
  CHECK(contains(result.output, "estimated"));
  CHECK(seconds < 1.0);  // process start included
  CHECK_FALSE(fs::exists(dir.path / "out"));
}
