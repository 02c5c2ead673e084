#pragma once
// Checks a report read back from a file (merge, plot) before anything uses
// it: against the report schema the program generates (schema.cpp,
// reports/schema.json), then what a schema cannot say: the summary counts
// (per status, and per verdict when it has them) add up, and every case's parameters pass its proof's own checks (the
// loader's: types, ranges, and across parameters). A hand-edited report with
// stride 0 or a negative image is refused here, not found by a crash later.
#include <cstdint>
#include <string>

#include "proof/proof.hpp"

namespace attnconv {

// Throws InputError "FILE: key 'PATH': what is wrong".
void validate_report(const json& report, const std::string& file);

// A report larger than this is refused before reading (a run of 100 000
// cases writes about 200 MB; reading one takes about twice its size).
constexpr std::uintmax_t max_report_bytes = std::uintmax_t(1) << 30;

// Reads and validates the report at `path` (a regular file of at most
// max_report_bytes; strict JSON: line and column of a syntax error, repeated
// keys refused); InputError naming the file.
json read_validated_report(const std::string& path);

}  // namespace attnconv
