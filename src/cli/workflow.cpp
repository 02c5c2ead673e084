#include "cli/workflow.hpp"

#include <new>

#include <cstddef>
#include <filesystem>
#include <iostream>

#include "report/html_report.hpp"
#include "cli/output_checks.hpp"
#include "report/plot.hpp"
#include "run/atomic_file.hpp"
#include "io/errors.hpp"
#include "report/junit.hpp"
#include "report/merge.hpp"
#include "cases/name_filter.hpp"
#include "run/output_lock.hpp"
#include "run/output_paths.hpp"
#include "io/quote.hpp"
#include "report/report_validation.hpp"
#include "report/schema.hpp"
#include "cases/shard.hpp"

namespace attnconv {

void add_run_options(CLI::App& run, WorkflowOptions& options) {
  run.add_option("--shard", options.shard, "run only shard I of N (1 <= I <= N) of the expanded cases, e.g. 2/8");
  run.add_option("--junit", options.junit, "also write JUnit XML (one testcase per case) to FILE");
  run.add_flag("--html", options.html, "also write DIR/report.html, the report as one self-contained web page");
  run.add_flag("--quiet,-q", options.quiet, "no progress lines on stderr (the summary line stays)");
}

void add_workflow_commands(CLI::App& app, WorkflowOptions& options) {
  options.merge = app.add_subcommand("merge", "join the reports of run --shard I/N into one report");
  options.merge->add_option("reports", options.reports, "shard reports")->required();
  options.merge->add_option("--out", options.merge_out, "folder for the merged report.json")->capture_default_str();
  options.merge->add_option("--junit", options.junit, "also write JUnit XML to FILE");
  options.merge->add_flag("--html", options.html, "also write OUT/report.html, the merged report as a web page");

  options.plot = app.add_subcommand("plot", "draw figures from a report with gnuplot (PNG and SVG)");
  options.plot->add_option("report", options.reports, "report.json")->required()->expected(1);
  options.plot->add_option("--out", options.plot_out, "folder for the figures")->capture_default_str();
  options.plot->add_option("--filter", options.plot_filter, "only the cases whose name matches this glob");

  options.html_command = app.add_subcommand("html", "write a report as one self-contained HTML page (inline CSS, script, SVG)");
  options.html_command->add_option("report", options.reports, "report.json")->required()->expected(1);
  options.html_command->add_option("--out", options.html_out, "the page (default: report.html beside the report)");
  const CLI::Validator limit(
      [](std::string& value) {
        return parse_html_limit(value) ? std::string() : "must be a count of cases or \"all\", got " + value;
      },
      "N|all");
  options.html_command
      ->add_option("--figures", options.html_figures, "draw the figures of the first N cases of the table (failed first) and N sweeps")
      ->check(limit)
      ->capture_default_str();
  options.html_command
      ->add_option("--details", options.html_details, "show params, metrics and provenance of the first N cases of the table")
      ->check(limit)
      ->capture_default_str();

  options.schema = app.add_subcommand("schema", "print the JSON Schema of case files or reports, from the proof registry");
  options.schema->add_option("kind", options.schema_kind, "cases | report")->required()->check(CLI::IsMember(std::vector<std::string>{"cases", "report"}));
}

namespace {

void write_junit(const json& report, const std::string& file) {
  if (file.empty()) return;
  const auto parent = std::filesystem::path(file).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  write_file_atomic(file, junit_xml(report));
}

// DIR/report.html of a report written to DIR/report.json, when asked for.
void write_html(const json& report, const std::string& report_file, bool wanted) {
  if (wanted)
    write_file_atomic(html_path_beside(report_file),
                      [&](const TextSink& sink) { write_html_report(report, report_file, HtmlLimits{}, sink); });
}

int merge(const WorkflowOptions& options) {
  check_merge_outputs(options.reports, options.merge_out, options.junit, options.html);
  std::vector<ShardReport> shards;
  for (const auto& path : options.reports) shards.push_back(read_report(path));
  const json merged = merge_reports(shards);
  const OutputLock lock = OutputLock::acquire(options.merge_out, std::cerr);
  try {
    const std::string file = (std::filesystem::path(options.merge_out) / "report.json").string();
    write_file_atomic(file, merged.dump(2) + "\n");
    write_junit(merged, options.junit);
    write_html(merged, file, options.html);
  } catch (const std::exception& e) {
    throw OutputError(std::string(e.what()) + "; the shard reports are unchanged: run the merge again");
  }
  std::cerr << summary_line(merged["summary"]) << " (merged from " << shards.size() << " shards); report: "
            << options.merge_out << "/report.json\n";
  return exit_code(merged);
}

int plot(const WorkflowOptions& options) {
  check_plot_outputs(options.reports.at(0), options.plot_out);
  PlotOptions plot_options;
  plot_options.out_dir = options.plot_out;
  plot_options.filter = options.plot_filter;
  const auto written = plot_report(read_report(options.reports.at(0)).report, plot_options);
  for (const auto& file : written) std::cout << file << "\n";
  if (written.empty())
    std::cerr << "attnconv plot: nothing to plot in " << options.reports.at(0)
              << (options.plot_filter.empty() ? "" : " matching --filter '" + clip(options.plot_filter) + "'" +
                                                         no_match_hint(options.plot_filter))
              << "\n";
  return 0;
}

// The report the page is made from, never destroyed (absl::NoDestructor's
// idea): the page is the process's last work, and its exit returns the nodes
// of a 100 000-case report (~0.9 GiB) at once, where freeing them one by one
// took 1-2 s of a 10 s page (docs/performance.md, "The HTML page at scale").
const json& kept_until_exit(json report) {
  alignas(json) static std::byte storage[sizeof(json)];
  return *::new (storage) json(std::move(report));
}

int html(const WorkflowOptions& options) {
  const std::string& report = options.reports.at(0);
  const std::string out = options.html_out.empty() ? html_path_beside(report) : options.html_out;
  check_outputs({{"the report", report}}, {{"the page", out}}, {});
  const HtmlLimits limits{*parse_html_limit(options.html_figures), *parse_html_limit(options.html_details)};
  const json& validated = kept_until_exit(read_validated_report(report));
  try {  // written as it is made: the page is never held whole
    write_file_atomic(out, [&](const TextSink& sink) { write_html_report(validated, report, limits, sink); });
  } catch (const InputError&) {
    throw;  // the report (exit 2), nothing written
  } catch (const std::exception& e) {
    throw OutputError(e.what());
  }
  std::cout << out << "\n";
  return 0;
}

}  // namespace

std::optional<int> run_workflow_command(WorkflowOptions& options) {
  try {
    if (options.merge->parsed()) return merge(options);
    if (options.plot->parsed()) return plot(options);
    if (options.html_command->parsed()) return html(options);
    if (options.schema->parsed()) {
      std::cout << (options.schema_kind == "cases" ? case_file_schema() : report_schema()).dump(2) << "\n";
      return 0;
    }
  } catch (const std::exception& e) {
    return failed_command(e);
  }
  return std::nullopt;
}

int failed_command(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) {  // never the raw std::bad_alloc text (issue 24, A3)
    std::cerr << "attnconv: out of memory: the machine could not give this command what it needed; run it with "
                 "smaller inputs or on a larger machine\n";
    return 2;
  }
  std::cerr << "attnconv: " << e.what() << "\n";
  return dynamic_cast<const OutputError*>(&e) ? 3 : 2;
}

void prepare_run(const SelectedCases& selected, WorkflowOptions& options, RunOptions& run) {
  if (!options.shard.empty()) run.report_fields["shard"] = shard_record(parse_shard(options.shard), selected.matched);
  options.progress =
      std::make_shared<Progress>(selected.cases.size(), std::cerr, Progress::stderr_is_terminal(), !options.quiet);
  run.on_case_finished = [progress = options.progress](const json& entry) { progress->case_finished(entry); };
  run.write_more_outputs = [junit = options.junit, html = options.html, out = run.out_dir](const json& report) {
    write_junit(report, junit);
    write_html(report, (std::filesystem::path(out) / "report.json").string(), html);
  };
}

void finish_run(const json& report, WorkflowOptions& options, const std::string& out_dir) {
  if (options.progress) options.progress->finish();
  std::cerr << summary_line(report["summary"]) << "; report: " << out_dir << "/report.json"
            << (options.junit.empty() ? "" : "; JUnit: " + options.junit)
            << (options.html ? "; HTML: " + html_path_beside(out_dir + "/report.json") : "") << "\n";
}

}  // namespace attnconv
