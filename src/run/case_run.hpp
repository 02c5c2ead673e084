#pragma once
// One case run: the proof's verify(), once or once per sample of a batch input
// (docs/cases.md), and the comparison of the proof's reference with the
// case's reference_output, then the verdict.
#include <functional>
#include <string>

#include "proof/proof.hpp"
#include "proof/verdict.hpp"

namespace attnconv {

struct CaseResult {
  Outcome outcome;
  Judgement verdict;
};

// A batch: every sample is verified and judged; the result is the worst
// sample's (by status, then "bound holds" over "holds", then max_abs), with
// max_abs_per_sample and worst_sample, and its dumped tensors stacked along a
// first batch dimension, except the module's parameters (the tensors the case
// loads other than input and reference_output, and conv_weight, conv_bias).
CaseResult run_verify(const Case& c);

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

}  // namespace attnconv
