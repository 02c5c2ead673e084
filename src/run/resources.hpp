#pragma once
// What a case will cost before it runs: its memory estimate (the proof's own,
// or a conservative fallback) against the --max-memory limit.
#include <vector>

#include "proof/proof.hpp"

namespace attnconv {

// Bytes the case needs at its peak: the proof's memory_estimate, else the
// fallback: 64 MiB plus one dense (HW)^2 attention matrix of 8-byte numbers
// for the "image" parameter (1 when there is none); for a batch checked sample
// by sample, the samples' outcomes it keeps too. Never allocates. Against the
// report's peak_memory (docs/large_runs.md): at least it, at most 4x it or it
// plus 64 MiB (ctest memory_estimates).
double case_memory_estimate(const Case& c);

// Throws InputError naming the file, the case and its estimate for the first
// case whose estimate exceeds max_bytes.
void check_memory(const std::vector<Case>& cases, double max_bytes);

}  // namespace attnconv
