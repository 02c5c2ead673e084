#pragma once
// Files that must not outlive the process when a signal stops it: the
// temporary file of an atomic write (atomic_file.hpp) and the lock of an
// output folder (output_lock.hpp). They are registered while they exist; the
// handlers of install_signal_cleanup() remove them (unlink(2), which is
// async-signal-safe) and then let the signal end the process as it would have.
#include <signal.h>

#include <string>

namespace attnconv {

// SIGINT, SIGTERM, SIGHUP and SIGQUIT remove the registered files, then end
// the process by the same signal (the shell sees 128 + signal). SIGPIPE is
// ignored: a reader that went away (`attnconv run … | head -1`) makes writes
// to stdout/stderr fail, not the run. Call once, at the start of main().
void install_signal_cleanup();

// Holds back the signals above for the life of this object (so that a file
// created and registered in its scope cannot be left behind between the two).
class BlockCleanupSignals {
 public:
  BlockCleanupSignals();
  ~BlockCleanupSignals();
  BlockCleanupSignals(const BlockCleanupSignals&) = delete;
  BlockCleanupSignals& operator=(const BlockCleanupSignals&) = delete;

 private:
  sigset_t old_;
};

// Registers `path` for removal on a signal for the life of this object.
class RemoveOnSignal {
 public:
  explicit RemoveOnSignal(const std::string& path);
  ~RemoveOnSignal();
  RemoveOnSignal(const RemoveOnSignal&) = delete;
  RemoveOnSignal& operator=(const RemoveOnSignal&) = delete;

 private:
  int slot_;  // -1: not registered (the registry is full or the path too long)
};

}  // namespace attnconv
