#include "io/bounded_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/errors.hpp"

namespace attnconv {

namespace {

// Closes the descriptor however the read ends.
struct OpenFile {
  int fd;
  ~OpenFile() {
    if (fd >= 0) ::close(fd);
  }
};

std::string size_text(std::uintmax_t bytes) {
  constexpr std::uintmax_t gib = std::uintmax_t(1) << 30;
  return bytes % gib == 0 ? std::to_string(bytes / gib) + " GiB" : std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

std::string read_bounded_file(const std::string& path, std::uintmax_t max_bytes, const std::string& kind,
                              const std::string& advice) {
  const auto cannot_read = [&](int code) { return InputError(path + ": cannot read the file: " + std::strerror(code)); };
  // O_NONBLOCK: opening a FIFO without a writer returns at once (open(2)).
  const OpenFile file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (file.fd < 0) throw cannot_read(errno);
  struct stat status {};
  if (::fstat(file.fd, &status) != 0) throw cannot_read(errno);
  if (!S_ISREG(status.st_mode)) throw InputError(path + ": not a regular file (a " + kind + " is)");
  const auto too_large = [&] {
    return InputError(path + ": larger than " + size_text(max_bytes) + ", the most a " + kind + " may hold" +
                      (advice.empty() ? "" : " (" + advice + ")"));
  };
  const auto size = static_cast<std::uintmax_t>(status.st_size);
  if (size > max_bytes) throw too_large();
  std::string text(std::size_t(size) + 1, '\0');  // one more: a file that grew
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(file.fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw cannot_read(errno);
    if (n == 0) break;
    done += std::size_t(n);
  }
  if (done > size)
    throw InputError(path + ": the file grew while it was read; run again when it is complete");
  text.resize(done);
  return text;
}

}  // namespace attnconv
