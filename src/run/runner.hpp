#pragma once
// Runs expanded cases through their proofs and writes DIR/report.json.
#include <vector>

#include "run/case_run.hpp"

namespace attnconv {

// All cases, each in a child process (executor.hpp), journaled as each
// finishes; writes DIR/report.json atomically and returns it. A SIGINT or
// SIGTERM ends the run with a report of the finished cases marked
// "interrupted": true (the journal stays, for --resume). When report.json or
// write_more_outputs cannot be written, throws OutputError and keeps the journal.
json run_cases(const std::vector<Case>& cases, const RunOptions& options);

// 0 when every case passed, 1 otherwise (docs/design.md, "Command line"); an
// interrupted run: 128 + the signal (130 for SIGINT, 143 for SIGTERM).
int exit_code(const json& report);

}  // namespace attnconv
