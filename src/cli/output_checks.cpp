#include "cli/output_checks.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "io/errors.hpp"
#include "run/output_lock.hpp"
#include "run/output_paths.hpp"
#include "proof/tensor_source.hpp"

namespace attnconv {

namespace fs = std::filesystem;

namespace {

// The files a run or merge writes into `out_dir` (a run: and its journal), and --junit.
std::vector<NamedPath> folder_outputs(const std::string& out_dir, const std::string& report_name, bool journal,
                                      const std::string& junit, bool html, bool resume = false) {
  std::vector<NamedPath> outputs{{report_name, (fs::path(out_dir) / "report.json").string()},
                                 {"the lock", OutputLock::path_in(out_dir)}};
  if (journal) outputs.push_back({"the journal", (fs::path(out_dir) / "report.journal.jsonl").string(), resume});
  if (!junit.empty()) outputs.push_back({"--junit", junit});
  if (html) outputs.push_back({"the --html page", (fs::path(out_dir) / "report.html").string()});
  return outputs;
}

// `path` is `folder` or below it, both compared canonically.
bool is_inside(const fs::path& path, const fs::path& folder) {
  std::error_code error;
  const fs::path p = fs::weakly_canonical(fs::absolute(path), error), f = fs::weakly_canonical(fs::absolute(folder), error);
  return std::mismatch(f.begin(), f.end(), p.begin(), p.end()).first == f.end();
}

}  // namespace

void check_run_outputs(const std::vector<std::string>& case_paths, const std::vector<Case>& cases, const RunOptions& options,
                       const std::string& junit, bool html) {
  const fs::path report = fs::path(options.out_dir) / "report.json";
  for (const auto& folder : case_paths)
    if (std::error_code error; fs::is_directory(folder, error) && is_inside(report, folder))
      throw InputError("the report " + report.string() + " is inside case folder " + folder + ": the next `run " + folder +
                       "` would read it as a case file; choose another --out");
  std::vector<NamedPath> inputs, folders;
  std::set<std::string> seen;
  const auto add_input = [&](const std::string& what, const std::string& path) {
    if (seen.insert(path).second) inputs.push_back({what, path});
  };
  for (const auto& c : cases) {
    add_input("case file", c.file);
    for (const auto& [key, value] : c.weights.items())
      add_input("weights." + key + " of case '" + c.name + "'", source_path(c.file, tensor_source(value)));
    if (!options.dump_dir.empty())
      folders.push_back({"the --dump-tensors folder of case '" + c.name + "'", (fs::path(options.dump_dir) / c.name).string()});
  }
  std::vector<NamedPath> made{{"--out", options.out_dir}};
  if (!options.dump_dir.empty()) made.push_back({"--dump-tensors", options.dump_dir});
  check_outputs(inputs, folder_outputs(options.out_dir, "the report", true, junit, html, options.resume), made, folders);
}

void check_merge_outputs(const std::vector<std::string>& reports, const std::string& out_dir, const std::string& junit,
                         bool html) {
  std::vector<NamedPath> inputs;
  for (const auto& report : reports) inputs.push_back({"the shard report", report});
  check_outputs(inputs, folder_outputs(out_dir, "the merged report", false, junit, html), {{"--out", out_dir}});
}

void check_plot_outputs(const std::string& report, const std::string& out_dir) {
  check_outputs({{"the report", report}}, {}, {{"--out", out_dir}});
}

}  // namespace attnconv
