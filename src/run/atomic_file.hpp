#pragma once
#include <string>

namespace attnconv {

// Writes `content` to a temporary file beside `path`, flushes it to disk and
// renames it over `path`: readers see the old file or the new one, never a
// truncated or half-written one. Throws std::runtime_error on failure (and
// leaves `path` untouched). A signal during the write removes the temporary
// file (signal_cleanup.hpp).
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace attnconv
