#pragma once
// Runs expanded cases through their proofs and writes DIR/report.json.
#include <string>
#include <vector>

#include "harness/proof.hpp"

namespace attnconv {

struct RunOptions {
  std::string out_dir = "reports";
  std::string dump_dir;  // empty: no tensor dumps
};

// One case: verify, judge, time. A proof that throws gives status "error".
json run_case(const Case& c, const RunOptions& options);

// All cases; writes the report atomically and returns it.
json run_cases(const std::vector<Case>& cases, const RunOptions& options);

// 0 when every case passed, 1 otherwise (DESIGN.md exit codes).
int exit_code(const json& report);

}  // namespace attnconv
