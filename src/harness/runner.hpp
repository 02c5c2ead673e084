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
  std::function<void(const json&)> write_more_outputs; // after report.json, before the journal goes (--junit)
  int jobs = 1;                 // cases run at once, each in its own process
  double timeout_seconds = 0;   // per case; 0: none
  double max_memory = 0;        // bytes the running cases may need together; 0: no limit
  bool resume = false;          // continue from DIR/report.journal.jsonl
};

// A case's identity in the report: name, proof, file, params, expect, sweep.
json case_entry(const Case& c);

// The entry of a case that could not run: status and verdict "error", `message` the reason.
json error_entry(const Case& c, const std::string& message, double seconds);

// One case: verify, judge, time. A proof that throws gives status "error".
json run_case(const Case& c, const RunOptions& options);

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
