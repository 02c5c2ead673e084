#include "run/output_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <ostream>

#include "io/errors.hpp"
#include "io/regular_file.hpp"

namespace attnconv {

namespace {

// The pid written in the lock file, or "" (the file is new or empty).
std::string holder(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string pid = n > 0 ? std::string(text, std::size_t(n)) : "";
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid;
}

}  // namespace

std::string OutputLock::path_in(const std::string& dir) { return (std::filesystem::path(dir) / "report.lock").string(); }

OutputLock OutputLock::acquire(const std::string& dir, std::ostream& notes) {
  std::filesystem::create_directories(dir);
  const std::string path = path_in(dir);
  for (;;) {
    const BlockCleanupSignals blocked;  // the lock file is registered before a signal can leave it behind
    // Not through a link (its target would be truncated), nor a FIFO or device: the lock is a regular file.
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0) {
      const int error = errno;
      const std::string why = not_a_regular_file(path);
      throw InputError(path + ": cannot create the lock of " + dir + ": " + (why.empty() ? std::strerror(error) : "it " + why));
    }
    if (struct stat info {}; ::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
      ::close(fd);
      throw InputError(path + ": cannot create the lock of " + dir + ": it " + not_a_regular_file(path));
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      const std::string pid = holder(fd);
      ::close(fd);
      if (error == EWOULDBLOCK)
        throw InputError(dir + ": another attnconv (pid " + (pid.empty() ? "?" : pid) + ") is writing this folder (lock " +
                         path + "); wait for it to finish or choose another --out");
      throw InputError(path + ": cannot lock: " + std::strerror(error));
    }
    // The holder we waited on may have removed the file meanwhile: lock the file the path names.
    struct stat locked {}, named {};
    if (::fstat(fd, &locked) != 0 || ::stat(path.c_str(), &named) != 0 || locked.st_ino != named.st_ino ||
        locked.st_dev != named.st_dev) {
      ::close(fd);
      continue;
    }
    if (const std::string pid = holder(fd); !pid.empty())
      notes << "attnconv: taking over the lock " << path << " left by pid " << pid << ", which no longer runs\n";
    const std::string text = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) != ssize_t(text.size())) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      throw InputError(path + ": cannot write the lock: " + reason);
    }
    return OutputLock(path, fd);
  }
}

OutputLock::OutputLock(std::string path, int fd)
    : path_(std::move(path)), fd_(fd), remove_on_signal_(std::make_unique<RemoveOnSignal>(path_)) {}

OutputLock::OutputLock(OutputLock&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), remove_on_signal_(std::move(other.remove_on_signal_)) {
  other.fd_ = -1;
}

OutputLock::~OutputLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still holding the lock: no other process owns this file yet
  ::close(fd_);
}

}  // namespace attnconv
