#include "io/regular_file.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "io/quote.hpp"

namespace attnconv {

namespace {

// What a file of mode `mode` is, when it is not a regular file.
std::string kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "is a folder";
  if (S_ISCHR(mode)) return "is a character device";
  if (S_ISBLK(mode)) return "is a block device";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "is a socket";
  return "is not a regular file";
}

}  // namespace

std::string not_a_regular_file(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return errno == ENOENT || errno == ENOTDIR ? "" : std::string("cannot be examined: ") + std::strerror(errno);
  if (S_ISLNK(info.st_mode)) {
    char target[PATH_MAX];
    const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    struct stat followed {};
    const bool dangling = ::stat(path.c_str(), &followed) != 0;
    return "is a symbolic link" + (n > 0 ? " to " + clip(std::string(target, std::size_t(n))) : std::string()) +
           (dangling ? " that leads nowhere" : "");
  }
  return kind_of(info.st_mode);
}

void write_regular_file(const std::string& path, const std::string& content) {
  const std::string shown = clip(path, PATH_MAX);
  // O_NONBLOCK: opening a FIFO without a reader fails at once instead of waiting; O_NOFOLLOW: a link fails (ELOOP).
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    const std::string why = not_a_regular_file(path);
    throw std::runtime_error("cannot write " + shown + ": " + (why.empty() ? std::string(std::strerror(error)) : "it " + why));
  }
  struct stat info {};
  const std::string kind = ::fstat(fd, &info) != 0 ? std::string("cannot be examined: ") + std::strerror(errno) : kind_of(info.st_mode);
  if (!kind.empty()) {
    ::close(fd);
    throw std::runtime_error("cannot write " + shown + ": it " + kind + ", not a regular file");
  }
  const auto fail = [&](const char* what) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error(std::string("cannot ") + what + " " + shown + ": " + reason);
  };
  if (::ftruncate(fd, 0) != 0) fail("truncate");
  for (std::size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      fail("write");
    }
    done += std::size_t(n);
  }
  if (::close(fd) != 0) throw std::runtime_error("cannot write " + shown + ": " + std::strerror(errno));
}

}  // namespace attnconv
