// The .npy reader (io/npy_check) against numpy itself: every file
// tests/scripts/npy_variants.py writes with numpy (all format versions, byte
// orders, Fortran order, hand-written headers) is read exactly as numpy.load
// reads it, by the load-time check and the loader alike; the files numpy.load
// refuses (and the two refused on purpose) are refused by both, with the same
// message. The SHA-256 of each file is Python hashlib's.
#include <catch2/catch.hpp>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "io/npy_check.hpp"

namespace {

using namespace attnconv;
using namespace attnconv::testing;
using json = nlohmann::json;

template <class T> void check_read(const fs::path& dir, const json& entry) {
  const std::string path = (dir / entry["file"].get<std::string>()).string();
  const NpyCheck check = check_npy_file(path, sizeof(T) == 4 ? "<f4" : "<f8", std::nullopt);
  CHECK(check.problem == "");
  CHECK(check.digest.bytes == entry["bytes"].get<std::uintmax_t>());
  CHECK(check.digest.sha256 == entry["sha256"].get<std::string>());
  const NpyTensor<T> tensor = read_npy_file<T>(path, std::nullopt);
  CHECK(tensor.digest.sha256 == check.digest.sha256);
  const xt::xarray<T>& array = tensor.values;
  CHECK(std::vector<std::size_t>(array.shape().begin(), array.shape().end()) ==
        entry["shape"].get<std::vector<std::size_t>>());
  const std::string reference = read_text(dir / entry["reference"].get<std::string>());
  REQUIRE(reference.size() == array.size() * sizeof(T));
  // bit for bit, C order (an empty array has no data pointer to compare)
  CHECK((reference.empty() || std::memcmp(reference.data(), array.data(), reference.size()) == 0));
}

template <class T> void check_refused(const fs::path& dir, const json& entry) {
  const std::string path = (dir / entry["file"].get<std::string>()).string();
  const NpyCheck check = check_npy_file(path, sizeof(T) == 4 ? "<f4" : "<f8", std::nullopt);
  CHECK_THAT(check.problem, Catch::Contains(entry["words"].get<std::string>()) && Catch::Contains(path));
  try {
    (void)read_npy_file<T>(path, std::nullopt);
    FAIL("the loader read a file the check refuses");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == check.problem);
  }
}

}  // namespace

TEST_CASE("the .npy reader reads what numpy.load reads, and refuses the rest at load time", "[npy]") {
  const ScratchDir dir("npy_variants");
  const std::string command = "/usr/bin/python3 '" + std::string(ATTNCONV_SOURCE_DIR) +
                              "/tests/scripts/npy_variants.py' '" + dir.path.string() + "'";
  REQUIRE(std::system(command.c_str()) == 0);
  const json manifest = json::parse(read_text(dir.path / "manifest.json"));
  REQUIRE(manifest.size() > 50);
  for (const auto& entry : manifest) {
    INFO(entry.dump());
    const bool single = entry["dtype"] == "float32";
    if (entry["expect"] == "read")
      single ? check_read<float>(dir.path, entry) : check_read<double>(dir.path, entry);
    else
      single ? check_refused<float>(dir.path, entry) : check_refused<double>(dir.path, entry);
  }
}

TEST_CASE("an .npy of the wrong float width or shape is refused by check and loader alike", "[npy]") {
  const ScratchDir dir("npy_width");
  const fs::path file = dir.path / "x.npy";
  write_npy(file, ">f4", {2, 3}, std::string(24, '\0'));
  CHECK_THAT(check_npy_file(file.string(), "<f8", std::nullopt).problem,
             Catch::Contains("dtype '>f4', expected '<f8'"));
  CHECK_THROWS_WITH(read_npy_file<double>(file.string(), std::nullopt), Catch::Contains("dtype '>f4'"));
  CHECK(check_npy_file(file.string(), "<f4", std::vector<std::size_t>{2, 3}).problem == "");
  CHECK_THAT(check_npy_file(file.string(), "<f4", std::vector<std::size_t>{3, 2}).problem,
             Catch::Contains("shape (2, 3), expected (3, 2)"));
  CHECK_THROWS_WITH(read_npy_file<float>(file.string(), std::vector<std::size_t>{3, 2}),
                    Catch::Contains("shape (2, 3), expected (3, 2)"));
}

TEST_CASE("a case loading a Fortran-order big-endian format 3.0 input gives the numbers of the C-order one", "[npy]") {
  const ScratchDir dir("npy_case");
  const std::string script =
      "import numpy as np, sys; x = np.random.default_rng(1).uniform(-1, 1, (2, 6, 6)); "
      "np.save(sys.argv[1] + '/c.npy', x); "
      "f = open(sys.argv[1] + '/f.npy', 'wb'); "
      "np.lib.format.write_array(f, np.asfortranarray(x.astype('>f8')), version=(3, 0)); f.close()";
  REQUIRE(std::system(("/usr/bin/python3 -c \"" + script + "\" '" + dir.path.string() + "'").c_str()) == 0);
  const json params = {{"image", {6, 6}}, {"kernel", 3}, {"in_channels", 2}, {"out_channels", 3},
                       {"heads", 9},      {"head_dim", 3}, {"padding", 1}};
  json cases = json::array();
  for (const char* name : {"c", "f"})
    cases.push_back({{"name", name}, {"proof", "cordonnier2020.theorem1"}, {"params", params},
                     {"weights", {{"input", std::string(name) + ".npy"}}}});
  write_text(dir.path / "cases.json", json{{"cases", cases}}.dump());
  const CliResult result = run_cli("run " + quoted(dir.path / "cases.json") + " --out " + quoted(dir.path / "out") + " --quiet");
  INFO(result.output);
  REQUIRE(result.code == 0);
  const json report = json::parse(read_text(dir.path / "out" / "report.json"));
  CHECK(report["cases"][0]["metrics"] == report["cases"][1]["metrics"]);
  CHECK(report["cases"][0]["metrics"]["max_abs"].get<double>() > 0);  // it computed something
  CHECK(report["cases"][0]["provenance"]["input"]["sha256"] != report["cases"][1]["provenance"]["input"]["sha256"]);
  CHECK(report["cases"][1]["provenance"]["input"]["file"] == "f.npy");
  CHECK(report["cases"][1]["provenance"]["conv_weight"]["drawn_from_seed"] == 0);
}

TEST_CASE("an .npy numpy refuses is refused by run before anything runs", "[npy]") {
  const ScratchDir dir("npy_run_refused");
  const std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 6, 6), }\n";
  const std::string data = raw_bytes(std::vector<double>(72, 0.5));
  const auto file_of = [&](const std::string& version, const std::string& text) {
    return "\x93NUMPY" + version + std::string(1, char(text.size() & 0xff)) + std::string(1, char(text.size() >> 8)) + text + data;
  };
  const std::vector<std::pair<std::string, std::string>> rows = {
      {file_of(std::string("\x01\x01", 2), header), "version 1.1, which numpy.load does not read"},
      {file_of(std::string("\x01\x00", 2), "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 6, 6), 'x': 1}\n"),
       "unknown key 'x'"},
      {file_of(std::string("\x01\x00", 2), "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 6, 6), '" +
                                                std::string(9000, 'k') + "': 1}\n"),
       "unknown key 'kkkk"},  // quoted in part
      {file_of(std::string("\x01\x00", 2), "{'descr': '<f8', 'shape': (2, 6, 6)}\n"), "no 'fortran_order' key"},
  };
  const fs::path out = dir.path / "out";
  write_text(out / "report.json", "{\"sentinel\": true}\n");
  for (const auto& [bytes, words] : rows) {
    write_text(dir.path / "x.npy", bytes);
    write_text(dir.path / "cases.json", R"({"cases": [{"name": "c1", "proof": "cordonnier2020.theorem1",
      "params": {"image": [6, 6], "kernel": 3, "in_channels": 2, "out_channels": 3, "heads": 9, "head_dim": 3, "padding": 1},
      "weights": {"input": "x.npy"}}]})");
    const CliResult result = run_cli("run " + quoted(dir.path / "cases.json") + " --out " + quoted(out));
    INFO(result.output);
    CHECK(result.code == 2);
    CHECK_THAT(result.output, Catch::Contains("cases.json: case 'c1': key 'weights.input': ") && Catch::Contains("x.npy") &&
                                  Catch::Contains(words));
    CHECK(result.output.size() < 2000);
    CHECK(read_text(out / "report.json") == "{\"sentinel\": true}\n");
    CHECK_FALSE(fs::exists(out / "report.journal.jsonl"));
  }
}

TEST_CASE("a NaN in a Fortran-order .npy is reported at its C-order index", "[npy]") {
  const ScratchDir dir("npy_fortran_nan");
  const std::string header = "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }\n";
  std::vector<double> column_major(6, 1.0);
  column_major[1] = std::nan("");  // Fortran index 1 = element (1, 0) = C index 3
  write_text(dir.path / "x.npy", std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + '\0' + header +
                                     raw_bytes(column_major));
  CHECK_THAT(check_npy_file((dir.path / "x.npy").string(), "<f8", std::nullopt).problem,
             Catch::Contains("holds NaN (first at flat index 3)"));
}
