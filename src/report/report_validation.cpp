#include "report/report_validation.hpp"

#include <map>

#include "io/bounded_file.hpp"
#include "io/errors.hpp"
#include "io/json_reader.hpp"
#include "parallel/threads.hpp"
#include "report/json_schema.hpp"
#include "report/schema.hpp"
#include "proof/verdict.hpp"

namespace attnconv {

namespace {

InputError bad(const std::string& file, const std::string& path, const std::string& what) {
  return InputError(file + ": key '" + path + "': " + what);
}

// The parameters of one case entry through its proof's checks.
void check_case_params(const json& entry, std::size_t index, const std::string& file) {
  const std::string path = "cases[" + std::to_string(index) + "]";
  const ProofDef* proof = find_proof(entry["proof"].get<std::string>());
  Case c;
  c.name = entry["name"].get<std::string>();
  c.base_name = entry.value("sweep_group", c.name);
  c.proof = proof->id;
  c.file = entry.value("file", file);
  c.params = without_retired(*proof, entry["params"]);
  c.request.expect = entry.value("expect", std::string("hold")) == "fail" ? Expect::fail : Expect::hold;
  c.weights = entry.value("weights", json::object());
  for (const auto& spec : proof->params)
    if (const std::string error = check_param(spec, c.params[spec.name]); !error.empty())
      throw bad(file, path + ".params." + spec.name, "case '" + c.name + "': " + error);
  try {
    prepare_case(c);
  } catch (const ParamError& e) {
    throw bad(file, path + ".params." + e.key, "case '" + c.name + "': " + e.what());
  }
}

}  // namespace

void validate_report(const json& report, const std::string& file) {
  static const json schema = report_schema();
  if (const std::string violation = schema_violation(schema, report); !violation.empty()) {
    const auto colon = violation.find(": ");
    throw bad(file, violation.substr(0, colon),
              violation.substr(colon + 2) + " (the rules of reports/schema.json, `attnconv schema report`)");
  }
  const json& cases = report["cases"];
  const json& summary = report["summary"];
  std::size_t counts[3] = {0, 0, 0};
  for (const auto& c : cases) counts[entry_status(c) == Status::pass ? 0 : entry_status(c) == Status::fail ? 1 : 2]++;
  const std::pair<const char*, std::size_t> expected[] = {
      {"total", cases.size()}, {"passed", counts[0]}, {"failed", counts[1]}, {"errored", counts[2]}};
  for (const auto& [key, count] : expected)
    if (summary[key].get<double>() != double(count))
      throw bad(file, std::string("summary.") + key,
                "says " + summary[key].dump() + " but the cases give " + std::to_string(count) +
                    " (the summary does not add up)");
  if (summary.contains("verdicts") && summary["verdicts"].is_object()) {  // cases per verdict, when the report counts them
    std::map<std::string, std::size_t> verdicts;
    for (const auto& c : cases)
      if (c.contains("verdict") && c["verdict"].is_string()) ++verdicts[c["verdict"].get<std::string>()];
    for (const auto& [verdict, count] : summary["verdicts"].items())
      verdicts.try_emplace(verdict, 0);
    for (const auto& [verdict, count] : verdicts) {
      const json said = summary["verdicts"].value(verdict, json(0));
      if (!said.is_number() || said.get<double>() != double(count))
        throw bad(file, "summary.verdicts." + verdict,
                  "says " + said.dump() + " but the cases give " + std::to_string(count) + " (the summary does not add up)");
    }
  }
  // Each case's parameters on the engine threads (a check reads only its own
  // entry and its tensors); the error reported is the first case's, whatever
  // the thread count.
  parallel_for(cases.size(), [&](std::size_t k, std::size_t) { check_case_params(cases[k], k, file); });
}

json read_validated_report(const std::string& path) {
  // A long report's cases are parsed in blocks on the engine threads (when there
  // are two or more: on one, the split would only add copies).
  const auto on_threads = [](std::size_t count, const std::function<void(std::size_t)>& work) {
    parallel_for(count, [&](std::size_t b, std::size_t) { work(b); });
  };
  json report = [&] {  // the text is freed before the report is checked
    const std::string text = read_bounded_file(path, max_report_bytes, "report");
    return engine_threads() > 1 ? parse_case_json(text, path, on_threads) : parse_case_json(text, path);
  }();
  validate_report(report, path);
  return report;
}

}  // namespace attnconv
