#pragma once
// Reads a whole input file (a case file, a report) with a bound on its size:
// the file is opened without blocking and checked with fstat before any byte
// is read, so a FIFO or a device (which would never end), a folder, or a
// sparse file of 2 GB is refused at once, and no more than the bound is read.
#include <cstdint>
#include <string>

namespace attnconv {

// The text of the regular file at `path`, at most `max_bytes` (a whole number
// of MiB). `kind` names what the file is in messages ("case file", "report");
// `advice` follows the size refusal ("use sweeps, or split it"). Throws
// InputError "PATH: not a regular file (a KIND is)", "PATH: larger than N MiB,
// the most a KIND may hold", "PATH: cannot read the file: REASON".
std::string read_bounded_file(const std::string& path, std::uintmax_t max_bytes, const std::string& kind,
                              const std::string& advice = "");

}  // namespace attnconv
