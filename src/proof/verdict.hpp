#pragma once
// From a proof's outcome and the case's tolerance to a status, a verdict and a
// message (docs/reports.md, "Verdicts").
#include <optional>
#include <string>
#include <vector>

#include "proof/proof.hpp"

namespace attnconv {

// Whether a case passed: its claim holds as it expects, or fails as predicted.
enum class Status { pass, fail, error };
// What the case found about its claim; the report writes them as below.
enum class Verdict { holds, bound_holds, fails, fails_as_predicted, error };

// "pass" | "fail" | "error" and "holds" | "bound holds" | "fails" | "fails as
// predicted" | "error": the report's words, read and written only at its JSON
// boundary. The readers return nothing for any other string.
std::string to_string(Status status);
std::string to_string(Verdict verdict);
std::optional<Status> status_from_string(const std::string& name);
std::optional<Verdict> verdict_from_string(const std::string& name);

// The status and verdict of a report's case entry (none when missing or not one of them).
std::optional<Status> entry_status(const json& entry);
std::optional<Verdict> entry_verdict(const json& entry);

// Every verdict, in the order the summary lists them.
inline constexpr Verdict all_verdicts[] = {Verdict::holds, Verdict::bound_holds, Verdict::fails,
                                           Verdict::fails_as_predicted, Verdict::error};

struct Judgement {
  Status status = Status::error;
  Verdict verdict = Verdict::error;
  std::string message;
  json tolerance;  // the tolerance applied
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
Judgement judge(const Case& c, const Outcome& outcome);

}  // namespace attnconv
