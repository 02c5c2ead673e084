#pragma once
// An output file is a regular file or nothing: a command never writes into,
// or renames over, a symbolic link (a dangling one, /dev/stdout), a device
// (/dev/null), a FIFO, a socket or a folder that stands where it writes.
#include <string>

namespace attnconv {

// Why `path` (not followed if it is a link) may not be replaced by a file a
// command writes, as a phrase completing "<path> ...": "is a FIFO", "is a
// symbolic link (to /dev/null)"; "" when nothing is there or a regular file is.
std::string not_a_regular_file(const std::string& path);

// Writes `content` to `path` in place: opened without following a link and
// without blocking on a FIFO, and checked to be a regular file before a byte
// is written (no check-then-write race). Throws std::runtime_error naming
// the path.
void write_regular_file(const std::string& path, const std::string& content);

}  // namespace attnconv
