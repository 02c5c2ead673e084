#include "harness/runner.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "harness/atomic_file.hpp"
#include "harness/case_run.hpp"
#include "harness/errors.hpp"
#include "harness/executor.hpp"
#include "harness/journal.hpp"
#include "harness/npy.hpp"
#include "harness/report.hpp"
#include "harness/sweep_fit.hpp"
#include "parallel/threads.hpp"
#include "harness/verdict.hpp"

namespace attnconv {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

json case_entry(const Case& c) {
  json entry = {{"name", c.name},         {"proof", c.proof},          {"file", c.file},
                {"params", c.params},     {"expect", c.expect},        {"sweep_group", c.base_name},
                {"sweep_point", c.sweep_point}};
  if (!c.weights_file.empty()) entry["weights_file"] = c.weights_file;
  if (!c.weights_file.empty()) entry["weights_prefix"] = c.weights_prefix;
  if (!c.weights.empty()) entry["weights"] = c.weights;
  if (!c.provenance.empty()) entry["provenance"] = c.provenance;
  if (c.batch > 0) entry["batch"] = c.batch;
  if (c.weights_partial) {
    json drawn = json::array();
    for (const auto& [name, source] : c.provenance.items())
      if (source.contains("drawn_from_seed") && name != "input") drawn.push_back(name);
    entry["weights_drawn"] = drawn;
  }
  return entry;
}

json error_entry(const Case& c, const std::string& message, double seconds) {
  json entry = case_entry(c);
  entry["status"] = "error";
  entry["verdict"] = "error";
  entry["metrics"] = json::object();
  entry["tolerance"] = c.tolerance;
  entry["message"] = "error: " + message;
  entry["seconds"] = seconds;
  return entry;
}

json run_case(const Case& c, const RunOptions& options) {
  json entry = case_entry(c);
  const auto start = std::chrono::steady_clock::now();
  try {
    const CaseResult result = run_verify(c);
    const Outcome& outcome = result.outcome;
    const Verdict& verdict = result.verdict;
    entry["status"] = verdict.status;
    entry["verdict"] = verdict.verdict;
    entry["metrics"] = outcome.metrics;
    entry["tolerance"] = verdict.tolerance;
    entry["message"] = verdict.message;
    if (!options.dump_dir.empty()) {
      const std::string dir = (std::filesystem::path(options.dump_dir) / c.name).string();
      dump_tensors(dir, outcome.tensors);
    }
  } catch (const std::exception& e) {
    return error_entry(c, e.what(), seconds_since(start));
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
  const auto out = std::filesystem::path(options.out_dir);
  const std::string journal_path = (out / "report.journal.jsonl").string();
  std::vector<std::optional<json>> entries(cases.size());
  Journal journal = options.resume ? Journal::resume(journal_path, cases, entries) : Journal::start(journal_path, cases);
  const std::size_t resumed = std::size_t(std::count_if(entries.begin(), entries.end(), [](const auto& e) { return bool(e); }));
  const int stop = execute_cases(cases, options, entries, [&](std::size_t i) {
    try {
      journal.append(i, *entries[i]);
    } catch (const std::exception& e) {
      throw OutputError(std::string(e.what()) + "; the cases finished before are kept in " + journal.path() +
                        ": run the same command again with --resume to continue");
    }
    if (options.on_case_finished) options.on_case_finished(*entries[i]);
  });
  json not_run = json::array();
  for (std::size_t i = 0; i < cases.size(); ++i)
    if (entries[i])
      report["cases"].push_back(*entries[i]);
    else
      not_run.push_back(cases[i].name);
  report["sweep_fits"] = fit_sweeps(report["cases"]);
  report["run"] = {{"jobs", options.jobs},
                   {"timeout_seconds", options.timeout_seconds},
                   {"max_memory_bytes", options.max_memory},
                   {"resumed_cases", resumed},
                   {"blas_threads_per_case", blas_threads()},
                   {"engine_threads_per_case", std::max(1, engine_threads() / options.jobs)}};
  if (stop) {
    report["interrupted"] = true;
    report["interrupted_by"] = signal_description(stop);
    report["signal"] = stop;
    report["not_run"] = not_run;
  }
  update_summary(report, seconds_since(start));
  if (stop) report["summary"]["not_run"] = not_run.size();
  try {
    write_file_atomic((out / "report.json").string(), report.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
    if (!stop && options.write_more_outputs) options.write_more_outputs(report);
  } catch (const std::exception& e) {
    throw OutputError(std::string(e.what()) + "; the " + std::to_string(report["cases"].size()) +
                      " finished cases are kept in " + journal.path() +
                      ": run the same command again with --resume to write the results without recomputing them");
  }
  if (!stop) journal.remove();
  return report;
}

int exit_code(const json& report) {
  if (report.value("interrupted", false)) return 128 + report.value("signal", 15);
  const auto& s = report["summary"];
  return s["failed"].get<int>() + s["errored"].get<int>() == 0 ? 0 : 1;
}

}  // namespace attnconv
