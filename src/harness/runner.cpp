#include "harness/runner.hpp"

#include <chrono>
#include <filesystem>

#include "harness/atomic_file.hpp"
#include "harness/npy.hpp"
#include "harness/report.hpp"
#include "harness/sweep_fit.hpp"
#include "harness/verdict.hpp"

namespace attnconv {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

json run_case(const Case& c, const RunOptions& options) {
  json entry = {{"name", c.name},         {"proof", c.proof},          {"file", c.file},
                {"params", c.params},     {"expect", c.expect},        {"sweep_group", c.base_name},
                {"sweep_point", c.sweep_point}};
  if (!c.weights.empty()) entry["weights"] = c.weights;
  const auto start = std::chrono::steady_clock::now();
  try {
    const Outcome outcome = find_proof(c.proof)->verify(c);
    const Verdict verdict = judge(c, outcome);
    entry["status"] = verdict.status;
    entry["metrics"] = outcome.metrics;
    entry["tolerance"] = verdict.tolerance;
    entry["message"] = verdict.message;
    if (!options.dump_dir.empty()) {
      const std::string dir = (std::filesystem::path(options.dump_dir) / c.name).string();
      dump_tensors(dir, outcome.tensors);
    }
  } catch (const std::exception& e) {
    entry["status"] = "error";
    entry["metrics"] = json::object();
    entry["tolerance"] = c.tolerance;
    entry["message"] = std::string("error: ") + e.what();
  }
  entry["seconds"] = seconds_since(start);
  return entry;
}

json run_cases(const std::vector<Case>& cases, const RunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  json report = {{"schema_version", report_schema_version},
                 {"tool", tool_info()},
                 {"environment", environment()},
                 {"cases", json::array()}};
  report.update(options.report_fields);
  for (const auto& c : cases) {
    report["cases"].push_back(run_case(c, options));
    if (options.on_case_finished) options.on_case_finished(report["cases"].back());
  }
  report["sweep_fits"] = fit_sweeps(report["cases"]);
  update_summary(report, seconds_since(start));
  write_file_atomic((std::filesystem::path(options.out_dir) / "report.json").string(), report.dump(2) + "\n");
  return report;
}

int exit_code(const json& report) {
  const auto& s = report["summary"];
  return s["failed"].get<int>() + s["errored"].get<int>() == 0 ? 0 : 1;
}

}  // namespace attnconv
