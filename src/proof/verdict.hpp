#pragma once
// From a proof's outcome and the case's tolerance to a status, a verdict and a
// message (README, "Verdicts").
#include <string>
#include <vector>

#include "proof/proof.hpp"

namespace attnconv {

// Every verdict a case entry may have, in the order the summary lists them.
inline const std::vector<std::string> verdict_names{"holds", "bound holds", "fails", "fails as predicted", "error"};

struct Verdict {
  std::string status;   // "pass" | "fail" | "error"
  std::string verdict;  // one of verdict_names
  std::string message;
  json tolerance;       // the tolerance applied
};

// Used when neither the case nor the proof gives a tolerance:
// float64 {"rel_l2": 1e-10}, float32 {"rel_l2": 1e-4}.
json dtype_tolerance(const std::string& dtype);

// "holds": every metric the tolerance names is within it, and, without a case
// tolerance, within the outcome's round-off tolerance; "bound holds": without
// a case tolerance, within the proof's default (its bound) but not within
// round-off; "fails": a metric exceeds the tolerance; "fails as predicted":
// that, with "expect": "fail" and the outcome's predicted failure measured;
// "error": a non-finite tensor, error metric or limit. The case passes with
// "holds" or "bound holds" when it expects the claim to hold, and with
// "fails as predicted" when it expects it to fail.
Verdict judge(const Case& c, const Outcome& outcome);

}  // namespace attnconv
