#pragma once
// What every memory estimate adds to the tensors it counts (issue 24, A3).
//
// A case runs in a process forked from the run; its report entry's
// peak_memory is that process's peak resident set less the run's resident set
// at the fork (the pages they share). What a case adds before its tensors
// (OpenBLAS's buffers, malloc's arenas, the code pages it touches first, its
// report entry) is at most `process_bytes`; each proof's memory_estimate is
// process_bytes plus the tensors alive at its peak, term by term.
namespace attnconv {

inline constexpr double mebibyte = 1024.0 * 1024.0;
inline constexpr double process_bytes = 16 * mebibyte;

}  // namespace attnconv
