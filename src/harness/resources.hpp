#pragma once
// What a case will cost before it runs: its memory estimate (the proof's own,
// or a conservative fallback), the --max-memory limit, and sizes in words.
#include <string>
#include <vector>

#include "harness/proof.hpp"

namespace attnconv {

// Bytes the case needs at its peak: the proof's memory_estimate, else the
// fallback: 64 MiB plus one dense (HW)^2 attention matrix of 8-byte numbers
// for the "image" parameter (1 when there is none). Never allocates.
double case_memory_estimate(const Case& c);

// "1048576", "512M", "1.5GiB", "2G", "100k" (powers of 1024) -> bytes.
// Throws InputError on anything else.
double parse_size(const std::string& text);

// The length of the plain decimal number (digits, one '.', an exponent) at
// the start of `text`, or 0: no sign, space, hex (0x10), inf or nan, which
// strtod would also take.
std::size_t decimal_prefix(const std::string& text);

// "12.3 MiB"
std::string format_bytes(double bytes);

// Half of the machine's physical memory: the default --max-memory.
double default_max_memory();

// Throws InputError naming the file, the case and its estimate for the first
// case whose estimate exceeds max_bytes.
void check_memory(const std::vector<Case>& cases, double max_bytes);

}  // namespace attnconv
