#pragma once
// DIR/report.lock: one command at a time writes an output folder. The lock
// is an flock(2) on the file, which holds the holder's pid for messages; the
// kernel drops it when the holder dies, so a lock file whose lock is free was
// left by a process that no longer runs, and is taken over.
#include <iosfwd>
#include <memory>
#include <string>

#include "run/signal_cleanup.hpp"

namespace attnconv {

class OutputLock {
 public:
  // Locks `dir` (made if missing). Throws InputError naming the pid of a live
  // holder; notes a stale lock taken over on `notes`.
  static OutputLock acquire(const std::string& dir, std::ostream& notes);

  // "DIR/report.lock"
  static std::string path_in(const std::string& dir);

  OutputLock(OutputLock&& other) noexcept;
  OutputLock& operator=(OutputLock&&) = delete;
  OutputLock(const OutputLock&) = delete;
  ~OutputLock();  // removes the lock file

 private:
  OutputLock(std::string path, int fd);
  std::string path_;
  int fd_ = -1;
  std::unique_ptr<RemoveOnSignal> remove_on_signal_;
};

}  // namespace attnconv
