#pragma once
// Sizes in words and back: --max-memory and --timeout values, byte counts in
// messages, and the machine's default memory limit.
#include <cstddef>
#include <string>

namespace attnconv {

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

}  // namespace attnconv
