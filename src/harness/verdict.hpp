#pragma once
// From a proof's outcome and the case's tolerance to a status and a message.
#include "harness/proof.hpp"

namespace attnconv {

struct Verdict {
  std::string status;  // "pass" | "fail"
  std::string message;
  json tolerance;      // the tolerance applied
};

// Used when neither the case nor the proof gives a tolerance:
// float64 {"rel_l2": 1e-10}, float32 {"rel_l2": 1e-4}.
json dtype_tolerance(const std::string& dtype);

// The claim holds when every metric named by the tolerance is within it. A
// case passes when that agrees with case.expect ("hold" or "fail").
Verdict judge(const Case& c, const Outcome& outcome);

}  // namespace attnconv
