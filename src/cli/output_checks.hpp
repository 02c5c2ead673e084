#pragma once
// What `run`, `merge` and `plot` read and write, checked before anything runs or is
// written (run/output_paths.hpp): no output over an input or another
// output, every output writable.
#include <string>
#include <vector>

#include "proof/proof.hpp"
#include "run/runner.hpp"

namespace attnconv {

// run: the case files and their .npy weights; DIR/report.json (not inside a
// case folder of `case_paths`, where a later run would read it as a case
// file), the journal, the lock, --junit, and each case's --dump-tensors folder.
// With `html`, DIR/report.html too.
void check_run_outputs(const std::vector<std::string>& case_paths, const std::vector<Case>& cases, const RunOptions& options,
                       const std::string& junit, bool html = false);

// merge: the shard reports; OUT/report.json, the lock and --junit.
void check_merge_outputs(const std::vector<std::string>& reports, const std::string& out_dir, const std::string& junit,
                         bool html = false);

// plot: the report; the --out folder.
void check_plot_outputs(const std::string& report, const std::string& out_dir);

}  // namespace attnconv
