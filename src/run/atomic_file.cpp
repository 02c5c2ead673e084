#include "run/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "io/regular_file.hpp"
#include "run/signal_cleanup.hpp"

namespace attnconv {

void write_file_atomic(const std::string& path, const std::string& content) {
  write_file_atomic(path, [&](const TextSink& sink) { sink(content); });
}

void write_file_atomic(const std::string& path, const std::function<void(const TextSink&)>& produce) {
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  std::string temp = path + ".tmp.XXXXXX";
  std::optional<RemoveOnSignal> remove_on_signal;
  int fd = -1;
  {
    const BlockCleanupSignals blocked;
    fd = mkstemp(temp.data());
    if (fd >= 0) remove_on_signal.emplace(temp);
  }
  if (fd < 0) throw std::runtime_error("cannot create a temporary file beside " + path + ": " + std::strerror(errno));
  const auto fail = [&](const char* what) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    fd = -1;
    ::unlink(temp.c_str());
    throw std::runtime_error(std::string(what) + " " + temp + ": " + reason);
  };
  std::string buffer;  // pieces gathered into writes of about 1 MiB
  const auto flush = [&] {
    for (std::size_t done = 0; done < buffer.size();) {
      const ssize_t n = ::write(fd, buffer.data() + done, buffer.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("cannot write");
      }
      done += std::size_t(n);
    }
    buffer.clear();
  };
  try {
    produce([&](std::string_view piece) {
      buffer += piece;
      if (buffer.size() >= (std::size_t(1) << 20)) flush();
    });
  } catch (...) {  // from `produce`, or a failed write (fail closed the file)
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  flush();
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) fail("cannot flush");
  if (::close(fd) != 0) {
    ::unlink(temp.c_str());
    throw std::runtime_error("cannot close " + temp);
  }
  // Checked again right before the rename (check_outputs did before the command ran): a link, device,
  // FIFO or socket put there meanwhile is left as it is. What is put there between this lstat and the
  // rename is replaced (a race rename(2) cannot close; RENAME_NOREPLACE cannot replace a regular file).
  if (const std::string why = not_a_regular_file(path); !why.empty()) {
    ::unlink(temp.c_str());
    throw std::runtime_error(path + " " + why + ": not replaced (an output is a regular file or nothing)");
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temp.c_str());
    throw std::runtime_error("cannot rename " + temp + " to " + path + ": " + reason);
  }
}

}  // namespace attnconv
