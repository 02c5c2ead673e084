#pragma once
// Runs expanded cases through their proofs and writes DIR/report.json.
#include <functional>
#include <string>
#include <vector>

#include "harness/proof.hpp"

namespace attnconv {

struct RunOptions {
  std::string out_dir = "reports";
  std::string dump_dir;  // empty: no tensor dumps
  json report_fields = json::object();                 // extra top-level report fields (e.g. "shard")
  std::function<void(const json&)> on_case_finished;   // called with each case's entry (progress)
};

// One case: verify, judge, time. A proof that throws gives status "error".
json run_case(const Case& c, const RunOptions& options);

// All cases; writes the report atomically and returns it.
json run_cases(const std::vector<Case>& cases, const RunOptions& options);

// 0 when every case passed, 1 otherwise (DESIGN.md exit codes).
int exit_code(const json& report);

}  // namespace attnconv
