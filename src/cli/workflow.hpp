#pragma once
// The researcher-workflow parts of the command line, kept out of main.cpp:
//   run … [--shard I/N] [--junit FILE] [--quiet]
//   merge REPORT… [--out DIR] [--junit FILE]
//   plot REPORT [--out DIR] [--filter GLOB]
//   html REPORT [--out FILE] [--figures N|all] [--details N|all]; run … --html and merge … --html
//   schema cases|report
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cases/load_within.hpp"
#include "run/progress.hpp"
#include "run/runner.hpp"

namespace attnconv {

struct WorkflowOptions {
  // run
  std::string shard, junit;
  bool quiet = false;
  bool html = false;  // run, merge: also DIR/report.html
  std::shared_ptr<Progress> progress;
  // subcommands
  CLI::App *merge = nullptr, *plot = nullptr, *html_command = nullptr, *schema = nullptr;
  std::vector<std::string> reports;
  std::string merge_out = "reports", plot_out = "figures", plot_filter, html_out, schema_kind;
  std::string html_figures = "100", html_details = "20000";  // html: HtmlLimits, a count or "all"
};

void add_run_options(CLI::App& run, WorkflowOptions& options);
void add_workflow_commands(CLI::App& app, WorkflowOptions& options);

// The exit code of merge/plot/schema when one of them was given, else nullopt.
std::optional<int> run_workflow_command(WorkflowOptions& options);

// Prints the message of a command that threw and returns its exit code
// (docs/command_line.md, "Exit codes"): 3 when a result could not be written (OutputError),
// else 2 (bad usage or bad input).
int failed_command(const std::exception& e);

// Before run_cases: hooks the shard record (of the filter's cases), the
// progress lines and the JUnit file into `run`.
void prepare_run(const SelectedCases& selected, WorkflowOptions& options, RunOptions& run);

// After run_cases: the summary line.
void finish_run(const json& report, WorkflowOptions& options, const std::string& out_dir);

}  // namespace attnconv
