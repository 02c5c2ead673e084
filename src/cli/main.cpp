// attnconv: checks published theorems about self-attention and convolution,
// case by case. docs/design.md, "Command line": run / list / proofs; exit 0 all
// passed, 1 a case failed or errored, 2 bad usage or bad input (nothing run),
// 3 the cases ran but a result could not be written (the journal kept for --resume).
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "cli/output_checks.hpp"
#include "cli/workflow.hpp"
#include "cases/case_loader.hpp"
#include "cases/load_within.hpp"
#include "io/errors.hpp"
#include "cases/name_filter.hpp"
#include "run/output_lock.hpp"
#include "io/quote.hpp"
#include "run/resources.hpp"
#include "run/runner.hpp"
#include "run/signal_cleanup.hpp"
#include "io/sizes.hpp"
#include "report/registry.hpp"
#include "report/version.hpp"
#include "parallel/process_environment.hpp"

namespace {

using namespace attnconv;

int run_command(int argc, char** argv) {
  CLI::App app{"attnconv: numerical checks of theorems relating self-attention and convolution"};
  app.require_subcommand(1);
  // The tool's version and commit, as every report's "tool" section records them.
  app.set_version_flag("--version", std::string("attnconv ") + tool_version + " (git " + git_commit + ")",
                       "print the tool version and git commit, then exit");

  std::vector<std::string> paths;
  std::string out_dir = "reports", filter, dump_dir, max_memory;
  RunOptions options;
  auto* run = app.add_subcommand("run", "run every case of the files/folders given (default cases/)");
  run->add_option("paths", paths, "case files or folders");
  run->add_option("--out", out_dir, "folder for report.json")->capture_default_str();
  run->add_option("--filter", filter, "run only the cases whose name matches this glob");
  run->add_option("--dump-tensors", dump_dir, "write each case's tensors as .npy under DIR/<case name>/");
  run->add_option("--jobs,-j", options.jobs, "cases run at once, each in its own process")->check(CLI::Range(1, 256));
  run->add_option("--timeout", options.timeout_seconds, "stop a case after SECONDS; it is reported as an error")
      ->check(CLI::Validator(
          [](std::string& value) {
            const double seconds = std::strtod(value.c_str(), nullptr);
            return !value.empty() && decimal_prefix(value) == value.size() && seconds > 0 && seconds < 1e9
                       ? std::string()
                       : "must be a number of seconds, 0 < SECONDS < 1e9, got " + value;
          },
          "SECONDS"));
  const auto* max_memory_option = run->add_option("--max-memory", max_memory,
                  "refuse any case whose memory estimate exceeds BYTES (or 512M, 4G...); default: half the physical memory");
  run->add_flag("--resume", options.resume, "continue an interrupted run from DIR/report.journal.jsonl");

  auto* list = app.add_subcommand("list", "print the expanded cases, one a line: name, proof, file, memory estimate");
  list->add_option("paths", paths, "case files or folders");
  list->add_option("--filter", filter, "only the cases whose name matches this glob");

  auto* proofs = app.add_subcommand("proofs", "print the registered proofs: statements, parameters, metrics, dumps");
  bool proofs_as_json = false, dumps_table = false;
  proofs->add_flag("--json", proofs_as_json, "as JSON, for tools");
  proofs->add_flag("--dumps-table", dumps_table, "the table of dumped tensors (docs/tensor_dumps.md)");

  WorkflowOptions workflow;  // --shard, --junit, --quiet; merge, plot, schema (cli/workflow.hpp)
  add_run_options(*run, workflow);
  add_workflow_commands(app, workflow);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (proofs->parsed()) {
    std::cout << (proofs_as_json ? proofs_json().dump(1) + "\n" : dumps_table ? dumps_table_markdown() : proofs_text());
    return 0;
  }
  if (const auto code = run_workflow_command(workflow)) return *code;
  if (paths.empty()) paths = {"cases"};
  try {
    const double memory_limit = max_memory_option->count() == 0 ? default_max_memory() : parse_size(max_memory);
    const CaseSelection selection{filter, workflow.shard.empty() ? std::nullopt : std::optional(parse_shard(workflow.shard))};
    const SelectedCases selected = load_selected_cases(paths, memory_limit, selection);
    const std::vector<Case>& cases = selected.cases;
    if (selected.matched.empty())
      throw InputError("no case matches" + (filter.empty() ? "" : " --filter '" + clip(filter) + "'" + no_match_hint(filter)));
    if (list->parsed()) {
      for (const auto& c : cases)
        std::cout << c.name << "\t" << c.proof << "\t" << c.file << "\t" << format_bytes(case_memory_estimate(c)) << "\n";
      return 0;
    }
    options.out_dir = out_dir, options.dump_dir = dump_dir;
    options.max_memory = memory_limit;
    prepare_run(selected, workflow, options);
    check_memory(cases, memory_limit);
    check_run_outputs(paths, cases, options, workflow.junit, workflow.html);
    const OutputLock lock = OutputLock::acquire(out_dir, std::cerr);
    const json report = run_cases(cases, options);
    if (report.value("interrupted", false)) {
      std::cerr << "attnconv: interrupted by " << report["interrupted_by"].get<std::string>() << ": "
                << report["cases"].size() << " cases finished, " << report["not_run"].size()
                << " not run; report: " << out_dir << "/report.json; continue with --resume\n";
      return exit_code(report);
    }
    finish_run(report, workflow, out_dir);
    return exit_code(report);
  } catch (const std::exception& e) {
    return failed_command(e);
  }
}

}  // namespace

int main(int argc, char** argv) {
  use_best_environment(argv);  // before anything runs (parallel/process_environment.hpp)
  install_signal_cleanup();
  const int code = run_command(argc, argv);
  // list, proofs and schema print to stdout: a closed pipe or a full disk
  // (SIGPIPE is ignored, signal_cleanup.hpp) must not pass for a complete listing
  if (!std::cout.flush()) {
    std::cerr << "attnconv: cannot write standard output (a closed pipe or a full disk): the output is incomplete\n";
    return 3;
  }
  return code;
}
