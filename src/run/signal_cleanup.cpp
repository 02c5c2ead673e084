#include "run/signal_cleanup.hpp"

#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstring>

namespace attnconv {

namespace {

// A fixed registry the signal handler can read without allocating or locking
// (signal-safety(7)): a slot is claimed by exchanging `used`, its path written
// before `ready` is set.
struct Slot {
  std::atomic<bool> used{false};
  std::atomic<bool> ready{false};
  char path[PATH_MAX] = {};
};
std::array<Slot, 64> registry;

extern "C" void remove_and_reraise(int signal) {
  for (auto& slot : registry)
    if (slot.ready.load()) ::unlink(slot.path);
  std::signal(signal, SIG_DFL);
  std::raise(signal);  // delivered when this handler returns
}

sigset_t cleanup_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&set, signal);
  return set;
}

}  // namespace

void install_signal_cleanup() {
  struct sigaction action {};
  action.sa_handler = remove_and_reraise;
  action.sa_mask = cleanup_signals();
  for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(signal, &action, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

BlockCleanupSignals::BlockCleanupSignals() {
  const sigset_t set = cleanup_signals();
  pthread_sigmask(SIG_BLOCK, &set, &old_);
}

BlockCleanupSignals::~BlockCleanupSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

RemoveOnSignal::RemoveOnSignal(const std::string& path) : slot_(-1) {
  if (path.size() >= PATH_MAX) return;
  for (std::size_t k = 0; k < registry.size(); ++k)
    if (!registry[k].used.exchange(true)) {
      std::memcpy(registry[k].path, path.c_str(), path.size() + 1);
      registry[k].ready.store(true);
      slot_ = int(k);
      return;
    }
}

RemoveOnSignal::~RemoveOnSignal() {
  if (slot_ < 0) return;
  registry[std::size_t(slot_)].ready.store(false);
  registry[std::size_t(slot_)].used.store(false);
}

}  // namespace attnconv
