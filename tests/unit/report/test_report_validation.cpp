// Reports read back by merge and plot are validated first (harness/
// report_validation, report/json_schema): the C++ validator agrees with
// Python's jsonschema on the generated report schema for good and bad
// reports, and merge and plot refuse a malformed or hand-edited report with
// exit 2, a message naming the file and the key, and nothing written.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "io/errors.hpp"
#include "report/json_schema.hpp"
#include "report/report_validation.hpp"
#include "report/schema.hpp"

namespace {

using namespace attnconv;
using namespace attnconv::testing;
using json = nlohmann::json;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A real run: two sweep points of Theorem 1, one case loading an .npy.
json real_report(const fs::path& dir, const std::string& extra_args = "") {
  write_npy(dir / "x.npy", "<f8", {2, 6, 6}, raw_bytes(std::vector<double>(72, 0.25)));
  const json params = {{"image", {6, 6}}, {"kernel", 3}, {"in_channels", 2}, {"out_channels", 3},
                       {"heads", 9},      {"head_dim", 3}, {"padding", 1}};
  write_text(dir / "cases.json",
             json{{"cases",
                   {{{"name", "c1"}, {"proof", "cordonnier2020.theorem1"}, {"params", params}, {"sweep", {{"alpha", {4, 60}}}}},
                    {{"name", "c2"}, {"proof", "cordonnier2020.theorem1"}, {"params", params},
                     {"weights", {{"input", "x.npy"}}}}}}}
                 .dump());
  const CliResult run = run_cli("run " + quoted(dir / "cases.json") + " --out " + quoted(dir / "full") + " --quiet " + extra_args);
  INFO(run.output);
  REQUIRE(run.code == 0);
  return json::parse(read_text(dir / "full" / "report.json"));
}

struct Edit {
  std::string label;
  json::json_pointer pointer;
  json value;        // null with remove: the key is removed
  bool remove = false;
  std::string key;   // the key path the message must name; empty: the edit is valid
};

std::vector<Edit> edits() {
  using P = json::json_pointer;
  return {
      {"unchanged", P(""), nullptr, false, ""},
      {"an integer written as 1.0", P("/cases/0/params/heads"), 9.0, false, ""},
      {"an extra top-level key", P("/note"), "hand-written", false, ""},
      {"status PASS", P("/cases/0/status"), "PASS", false, "cases[0].status"},
      {"status removed", P("/cases/1/status"), nullptr, true, "cases[1].status"},
      {"stride 0", P("/cases/0/params/stride"), {0, 1}, false, "cases[0].params.stride[0]"},
      {"negative image", P("/cases/2/params/image"), {-6, 6}, false, "cases[2].params.image[0]"},
      {"padding 'sam'", P("/cases/0/params/padding"), "sam", false, "cases[0].params.padding"},
      {"padding of 3 sides", P("/cases/0/params/padding"), {1, 1, 1}, false, "cases[0].params.padding"},
      {"unknown parameter", P("/cases/0/params/kernal"), 3, false, "cases[0].params.kernal"},
      {"a parameter removed", P("/cases/0/params/kernel"), nullptr, true, "cases[0].params.kernel"},
      {"unknown proof", P("/cases/0/proof"), "cordonier2020.theorem1", false, "cases[0].proof"},
      {"schema_version 2", P("/schema_version"), 2, false, "schema_version"},
      {"tool removed", P("/tool"), nullptr, true, "tool"},
      {"summary.total negative", P("/summary/total"), -1, false, "summary.total"},
      {"empty case name", P("/cases/0/name"), "", false, "cases[0].name"},
      {"a metric of the wrong type", P("/cases/0/metrics/max_abs"), "small", false, "cases[0].metrics.max_abs"},
      {"a bad start_time", P("/environment/start_time"), "yesterday", false, "environment.start_time"},
      {"cases not a list", P("/cases"), json::object(), false, "cases"},
      {"a bad sha256", P("/cases/2/provenance/input/sha256"), "xyz", false, "cases[2].provenance.input.sha256"},
      {"seconds negative", P("/cases/1/seconds"), -3, false, "cases[1].seconds"},
  };
}

json edited(json report, const Edit& edit) {
  if (edit.pointer.empty()) return report;
  if (edit.remove) {
    report.at(edit.pointer.parent_pointer()).erase(edit.pointer.back());
  } else {
    report[edit.pointer] = edit.value;
  }
  return report;
}

}  // namespace

TEST_CASE("the report validator agrees with Python's jsonschema on the generated report schema", "[report_validation]") {
  const ScratchDir dir("report_validation_agree");
  const json report = real_report(dir.path);
  const json schema = report_schema();
  write_text(dir.path / "schema.json", schema.dump());
  json files = json::array();
  std::vector<std::string> ours;
  for (const auto& edit : edits()) {
    const json r = edited(report, edit);
    const fs::path file = dir.path / ("edit" + std::to_string(files.size()) + ".json");
    write_text(file, r.dump());
    files.push_back(file.string());
    ours.push_back(schema_violation(schema, r));
    INFO(edit.label << ": " << ours.back());
    if (edit.key.empty())
      CHECK(ours.back() == "");
    else
      CHECK(ours.back().rfind(edit.key + ": ", 0) == 0);
  }
  // Python's jsonschema (Draft 2020-12) on the same files: "valid" or "invalid", one a line.
  const std::string script =
      "import json, sys, jsonschema; s = json.load(open(sys.argv[1])); v = jsonschema.Draft202012Validator(s)\n"
      "for f in sys.argv[2:]: print('valid' if v.is_valid(json.load(open(f))) else 'invalid')";
  write_text(dir.path / "check.py", script);
  std::string command = "/usr/bin/python3 " + quoted(dir.path / "check.py") + " " + quoted(dir.path / "schema.json");
  for (const auto& f : files) command += " '" + f.get<std::string>() + "'";
  REQUIRE(std::system((command + " > " + quoted(dir.path / "python.txt")).c_str()) == 0);
  std::istringstream python(read_text(dir.path / "python.txt"));
  for (std::size_t k = 0; k < ours.size(); ++k) {
    std::string verdict;
    std::getline(python, verdict);
    INFO(edits()[k].label);
    CHECK(verdict == (ours[k].empty() ? "valid" : "invalid"));
  }
}

TEST_CASE("a report run writes with an errored case (a non-finite tolerance, written as null) validates", "[report_validation]") {
  const ScratchDir dir("report_validation_errored");
  const json params = {{"image", {6, 6}}, {"kernel", 3}, {"in_channels", 2}, {"out_channels", 3},
                       {"heads", 9},      {"head_dim", 3}, {"padding", 1}, {"alpha", 1e308}};
  write_text(dir.path / "cases.json",
             json{{"cases", {{{"name", "c1"}, {"proof", "cordonnier2020.theorem1"}, {"params", params}, {"expect", "fail"}}}}}.dump());
  const CliResult run = run_cli("run " + quoted(dir.path / "cases.json") + " --out " + quoted(dir.path / "out") + " --quiet");
  INFO(run.output);
  REQUIRE(run.code == 1);
  const json report = read_validated_report((dir.path / "out" / "report.json").string());  // throws when it does not validate
  CHECK(report["cases"][0]["verdict"] == "error");
  CHECK(report["cases"][0]["tolerance"]["max_abs"].is_null());
  CHECK(schema_violation(report_schema(), report) == "");
}

TEST_CASE("merge and plot refuse a bad report: exit 2, the file and key named, nothing written", "[report_validation]") {
  const ScratchDir dir("report_validation_cli");
  const json report = real_report(dir.path);
  const fs::path out = dir.path / "out";
  write_text(out / "report.json", "{\"sentinel\": true}\n");
  const auto refused = [&](const std::string& label, const std::string& text, const std::vector<std::string>& words,
                           const std::function<void(const fs::path&)>& setup = nullptr) {
    INFO(label);
    const fs::path file = dir.path / "bad.json";
    fs::remove(file);
    write_text(file, text);
    if (setup) setup(file);
    for (const std::string command : {"merge", "plot"}) {
      const CliResult result = run_cli(command + " " + quoted(file) + " --out " + quoted(out));
      INFO(command << ": " << result.output);
      CHECK(result.code == 2);
      CHECK(contains(result.output, file.string()));
      for (const auto& w : words) CHECK(contains(result.output, w));
      CHECK(result.output.size() < 2000);
      CHECK(valid_utf8(result.output));
      CHECK(read_text(out / "report.json") == "{\"sentinel\": true}\n");
      CHECK(std::distance(fs::directory_iterator(out), fs::directory_iterator()) == 1);  // no figure either
    }
  };
  for (const auto& edit : edits())
    if (!edit.key.empty()) refused(edit.label, edited(report, edit).dump(), {"key '" + edit.key + "'"});
  json adds_up = report;
  adds_up["summary"]["passed"] = 7;
  refused("a summary that does not add up", adds_up.dump(), {"key 'summary.passed'", "does not add up"});
  json verdicts = report;  // counted per verdict, as the summary of a report with verdicts does
  for (auto& c : verdicts["cases"]) c["verdict"] = "holds";
  verdicts["summary"]["verdicts"] = {{"holds", 3}};
  validate_report(verdicts, "v.json");
  verdicts["summary"]["verdicts"] = {{"holds", 2}, {"fails", 1}};
  refused("verdict counts that do not add up", verdicts.dump(), {"key 'summary.verdicts.fails'", "does not add up"});
  json heads = report;
  heads["cases"][0]["params"]["heads"] = 4;  // valid per key; the proof's own check refuses it
  refused("too few heads for the claim", heads.dump(), {"key 'cases[0].params.heads'", "heads >= the number of kernel positions"});
  refused("malformed JSON", "{\"cases\": [", {"malformed JSON", "line 1"});
  refused("a repeated key", "{\"cases\": [], \"cases\": []}", {"key 'cases'", "appears twice"});
  refused("empty file", "", {"malformed JSON"});
  refused("bytes that are not UTF-8", "{\"cases\": [\xff]}", {"malformed JSON at line 1, column 12", "last read: '\"cases\": [\\xFF'"});
  refused("a FIFO (no writer)", "", {"bad.json: not a regular file (a report is)"},
          [](const fs::path& file) { fs::remove(file), ::mkfifo(file.c_str(), 0600); });
  refused("a report of 2 GB (sparse)", "", {"bad.json: larger than 1 GiB, the most a report may hold"},
          [](const fs::path& file) { fs::resize_file(file, std::uintmax_t(2) << 30); });
  refused("nested arrays", std::string(100000, '[') + std::string(100000, ']'), {});
  const CliResult folder = run_cli("merge " + quoted(dir.path) + " --out " + quoted(out));
  CHECK(folder.code == 2);
  CHECK(contains(folder.output, dir.path.string() + ": not a regular file"));
}

TEST_CASE("merge refuses an edited cases_digest and a count of 2e9 shards without allocating by it", "[report_validation]") {
  const ScratchDir dir("report_validation_shards");
  real_report(dir.path);
  for (int index : {1, 2})
    REQUIRE(run_cli("run " + quoted(dir.path / "cases.json") + " --shard " + std::to_string(index) + "/2 --out " +
                    quoted(dir.path / ("s" + std::to_string(index))) + " --quiet").code == 0);
  const fs::path one = dir.path / "s1" / "report.json", two = dir.path / "s2" / "report.json";
  json edited_list = json::parse(read_text(two));
  edited_list["shard"]["all_cases"][0] = "another";
  write_text(dir.path / "edited.json", edited_list.dump());
  CliResult result = run_cli("merge " + quoted(one) + " " + quoted(dir.path / "edited.json") + " --out " + quoted(dir.path / "m"));
  CHECK(result.code == 2);
  CHECK(contains(result.output, "edited.json: key 'shard.cases_digest'"));
  CHECK(contains(result.output, "not the digest of its shard.all_cases"));
  for (const fs::path& file : {one, two}) {
    json huge = json::parse(read_text(file));
    huge["shard"]["count"] = 2000000000;
    write_text(file, huge.dump());
  }
  result = run_cli("merge " + quoted(one) + " " + quoted(two) + " --out " + quoted(dir.path / "m"));
  INFO(result.output);
  CHECK(result.code == 2);
  CHECK(contains(result.output, "missing shard(s) 3/2000000000"));
  CHECK(contains(result.output, "2 report(s) given for a run of 2000000000 shards"));
  CHECK_FALSE(fs::exists(dir.path / "m"));
}

TEST_CASE("the JSON Schema subset: each keyword accepts and refuses, unknown keywords are an error", "[report_validation]") {
  const auto violation = [](const json& schema, const json& value) { return schema_violation(schema, value); };
  const json number = {{"type", "number"}, {"minimum", 0}, {"exclusiveMaximum", 10}};
  CHECK(violation(number, 0) == "");
  CHECK(violation(number, 10) == "(top level): must be < 10, got 10");
  CHECK(violation(number, -1) == "(top level): must be >= 0, got -1");
  CHECK(violation({{"type", "integer"}}, 2.0) == "");
  CHECK(violation({{"type", "integer"}}, 2.5) == "(top level): must be integer, got number 2.5");
  const json text = {{"type", "string"}, {"minLength", 1}, {"maxLength", 3}, {"pattern", "^a"}};
  CHECK(violation(text, "ab") == "");
  CHECK(violation(text, "abcd") == "(top level): must have at most 3 characters");
  CHECK(violation(text, "ba") == "(top level): must match \"^a\", got \"ba\"");
  const json object = {{"type", "object"}, {"required", {"a"}}, {"properties", {{"a", {{"enum", {1, 2}}}}}},
                       {"additionalProperties", false}, {"maxProperties", 1}};
  CHECK(violation(object, {{"a", 1}}) == "");
  CHECK(violation(object, json::object()) == "a: missing");
  CHECK(violation(object, {{"a", 3}}) == "a: must be one of 1, 2, got 3");
  CHECK(violation(object, {{"a", 1}, {"b", 1}}) == "(top level): must have at most 1 keys");
  const json list = {{"type", "array"}, {"items", {{"const", 1}}}, {"minItems", 1}, {"uniqueItems", true}};
  CHECK(violation(list, {1}) == "");
  CHECK(violation(list, {1, 1}) == "(top level): must not repeat an item, repeats 1");
  CHECK(violation(list, json::array()) == "(top level): must have at least 1 items, has 0");
  const json forms = {{"anyOf", {{{"type", "string"}}, {{"type", "null"}}}}, {"not", {{"const", "x"}}}};
  CHECK(violation(forms, nullptr) == "");
  CHECK(violation(forms, "x") == "(top level): must not be \"x\"");
  CHECK(violation(forms, 1) == "(top level): matches none of its allowed forms, got 1");
  const json conditional = {{"if", {{"properties", {{"k", {{"const", 1}}}}}}},
                            {"then", {{"required", {"v"}}}},
                            {"else", {{"required", {"w"}}}}};
  CHECK(violation(conditional, {{"k", 1}, {"v", 0}}) == "");
  CHECK(violation(conditional, {{"k", 1}}) == "v: missing");
  CHECK(violation(conditional, {{"k", 2}}) == "w: missing");
  const json with_ref = {{"$defs", {{"n", {{"type", "integer"}}}}}, {"items", {{"$ref", "#/$defs/n"}}}};
  CHECK(violation(with_ref, {1, "2"}) == "[1]: must be integer, got string \"2\"");
  CHECK_THROWS_AS(violation({{"propertyNames", json::object()}}, 1), std::logic_error);
  CHECK_THROWS_AS(violation({{"$ref", "#/$defs/none"}}, 1), std::logic_error);
  CHECK(violation(false, 1) == "(top level): is not allowed here");
}

TEST_CASE("a long report is checked on threads, and its first bad case is the one named", "[report_validation]") {
  const ScratchDir dir("report_validation_long");
  const json report = real_report(dir.path);
  json long_report = report;
  long_report["cases"] = json::array();
  const std::size_t copies = 3000;  // 9000 cases: the schema's blocks of items and the params checks run on threads
  for (std::size_t k = 0; k < copies; ++k)
    for (const json& c : report["cases"]) long_report["cases"].push_back(c);
  for (const char* key : {"total", "passed", "failed", "errored"})
    long_report["summary"][key] = report["summary"][key].get<std::size_t>() * copies;
  for (auto& [verdict, count] : long_report["summary"]["verdicts"].items()) count = count.get<std::size_t>() * copies;
  REQUIRE_NOTHROW(validate_report(long_report, "long.json"));
  // a status the schema refuses; a kernel wider than the image, which only the proof's own check refuses
  for (const auto& [member, value] : std::vector<std::pair<std::string, json>>{{"status", "PASS"}, {"params/kernel", 9}}) {
    INFO(member);
    json bad = long_report;
    for (const std::size_t k : {8500, 5003, 7000}) bad[json::json_pointer("/cases/" + std::to_string(k) + "/" + member)] = value;
    CHECK_THROWS_WITH(validate_report(bad, "long.json"), Catch::Contains("long.json: key 'cases[5003]"));
  }
}
