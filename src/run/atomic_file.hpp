#pragma once
#include <functional>
#include <string>
#include <string_view>

namespace attnconv {

// Writes `content` to a temporary file beside `path`, flushes it to disk and
// renames it over `path`: readers see the old file or the new one, never a
// truncated or half-written one. Throws std::runtime_error on failure (and
// leaves `path` untouched). `path` must be absent or a regular file, checked
// right before the rename: a symbolic link, device, FIFO or socket there is
// never replaced (io/regular_file.hpp). A signal during the write removes the temporary
// file (signal_cleanup.hpp).
void write_file_atomic(const std::string& path, const std::string& content);

// The same for content made piece by piece: `produce` passes each piece to the
// sink it is given, which writes it to the temporary file (a large output is
// never held whole). An exception from `produce` removes the temporary file
// and propagates as it is.
using TextSink = std::function<void(std::string_view)>;
void write_file_atomic(const std::string& path, const std::function<void(const TextSink&)>& produce);

}  // namespace attnconv
