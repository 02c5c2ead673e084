#include "run/runner.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

#include "run/atomic_file.hpp"
#include "run/case_run.hpp"
#include "io/errors.hpp"
#include "run/executor.hpp"
#include "run/journal.hpp"
#include "proof/npy.hpp"
#include "report/report.hpp"
#include "report/sweep_fit.hpp"
#include "parallel/threads.hpp"
#include "proof/verdict.hpp"

namespace attnconv {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

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
  // Before the journal exists, so that a stop signal from then on ends in an interrupted report;
  // until the cases are done (then both stay ignored after a stop, else the handlers before return).
  std::optional<StopSignals> signals(std::in_place);
  Journal journal = options.resume ? Journal::resume(journal_path, cases, entries) : Journal::start(journal_path, cases);
  const std::size_t resumed = std::size_t(std::count_if(entries.begin(), entries.end(), [](const auto& e) { return bool(e); }));
  const int stop = execute_cases(*signals, cases, options, entries, [&](std::size_t i) {
    try {
      journal.append(i, *entries[i]);
    } catch (const std::exception& e) {
      throw OutputError(std::string(e.what()) + "; the cases finished before are kept in " + journal.path() +
                        ": run the same command again with --resume to continue");
    }
    if (options.on_case_finished) options.on_case_finished(*entries[i]);
  });
  signals.reset();
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
