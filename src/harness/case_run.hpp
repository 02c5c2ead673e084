#pragma once
// One case run: the proof's verify(), once or once per sample of a batch input
// (README, "Cases"), and the comparison of the proof's reference with the
// case's reference_output, then the verdict.
#include "harness/proof.hpp"
#include "harness/verdict.hpp"

namespace attnconv {

struct CaseResult {
  Outcome outcome;
  Verdict verdict;
};

// A batch: every sample is verified and judged; the result is the worst
// sample's (by status, then "bound holds" over "holds", then max_abs), with
// max_abs_per_sample and worst_sample, and its dumped tensors stacked along a
// first batch dimension, except the module's parameters (the tensors the case
// loads other than input and reference_output, and conv_weight, conv_bias).
CaseResult run_verify(const Case& c);

}  // namespace attnconv
