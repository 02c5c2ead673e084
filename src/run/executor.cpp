#include "run/executor.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "proof/npy.hpp"
#include "run/resources.hpp"
#include "parallel/threads.hpp"

namespace attnconv {

namespace {

using Clock = std::chrono::steady_clock;

// The first signal delivered stops the run and names it; a second one changes nothing. The handler
// runs with both stop signals blocked (a second one delivered to the same thread waits until the
// first is recorded), and the compare-exchange settles one delivered to another thread meanwhile
// (a lock-free atomic is signal-safe).
std::atomic<int> stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);
extern "C" void on_stop_signal(int signal) {
  int none = 0;
  stop_signal.compare_exchange_strong(none, signal);
}

struct Child {
  std::size_t index;
  pid_t pid;
  int fd;  // read end of the child's pipe
  Clock::time_point start;
  double memory;
  double parent_resident;  // the run's anonymous resident memory when it forked this child
  std::string output;
};

// This process's anonymous resident memory in bytes (RssAnon of /proc/self/status), 0 when
// unreadable. A forked child starts with exactly these pages in its resident set (fork copies the
// page tables of the private memory it has touched, not those of its mapped files: the program's
// and the libraries' code the child touches counts as the child's).
double anonymous_resident_bytes() {
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[8192] = {};
  std::size_t size = 0;
  for (ssize_t n; size + 1 < sizeof text && (n = ::read(fd, text + size, sizeof text - 1 - size)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    size += std::size_t(n);
  }
  ::close(fd);
  const char* line = std::strstr(text, "\nRssAnon:");
  unsigned long long kib = 0;
  if (!line || std::sscanf(line + 1, "RssAnon: %llu", &kib) != 1) return 0;
  return double(kib) * 1024;
}

[[noreturn]] void run_child(const Case& c, const RunOptions& options, int fd, pid_t parent) {
  for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL})
    std::signal(signal, SIG_DFL);  // a crash ends the child, whatever handlers the parent had
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a killed parent
  if (getppid() != parent) _exit(3);
  int code = 0;
  try {
    // The cores go to the jobs (parallel/threads.hpp): BLAS stays at one thread.
    if (options.jobs > 1) set_engine_threads(std::max(1, engine_threads() / options.jobs));
    const std::string text = run_case(c, options).dump(-1, ' ', false, json::error_handler_t::replace);
    for (std::size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) _exit(4);
      done += std::size_t(n);
    }
  } catch (...) {
    code = 5;
  }
  _exit(code);  // no atexit handlers, no flushing of the parent's buffers
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

json finish_entry(const Case& c, const Child& child, int status, double seconds);

// The entry of a child that closed its pipe, from its output and exit status, with its peak
// memory and estimate.
json finish_child(const Case& c, Child& child) {
  int status = 0;
  struct rusage usage {};
  while (wait4(child.pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  const double seconds = seconds_since(child.start);
  // A forked child starts with the run's anonymous pages (shared, copy on write) in its own resident
  // set: what the case itself added is its peak (ru_maxrss, KiB) less those at the fork.
  const double peak = std::max(0.0, double(usage.ru_maxrss) * 1024 - child.parent_resident);
  json entry = finish_entry(c, child, status, seconds);
  entry["peak_memory"] = peak;
  entry["memory_estimate"] = child.memory;
  return entry;
}

json finish_entry(const Case& c, const Child& child, int status, double seconds) {
  if (WIFSIGNALED(status))
    return error_entry(c,
                       "the case crashed: its process was killed by signal " + signal_description(WTERMSIG(status)) +
                           (WTERMSIG(status) == SIGKILL ? " (perhaps out of memory)" : ""),
                       seconds);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    try {
      json entry = json::parse(child.output);
      if (entry.is_object() && entry.contains("status")) return entry;
    } catch (const json::exception&) {
    }
  }
  return error_entry(c, "the case's process exited with code " + std::to_string(WEXITSTATUS(status)) +
                            " without a valid result",
                     seconds);
}

void kill_child(Child& child) {
  ::kill(child.pid, SIGKILL);
  while (waitpid(child.pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  ::close(child.fd);
}

}  // namespace

int poll_wait_ms(double seconds_left) {
  // In double until clamped: int(seconds_left * 1000) overflows from 2.1e6 s.
  if (!(seconds_left > 0)) return 0;
  return int(std::min(200.0, std::floor(seconds_left * 1000) + 1));
}

std::string signal_description(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  const char* description = strsignal(signal);
  return (abbrev ? "SIG" + std::string(abbrev) : "signal " + std::to_string(signal)) +
         (description ? " (" + std::string(description) + ")" : "");
}

StopSignals::StopSignals() {
  stop_signal = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  action.sa_flags = 0;  // no SA_RESTART: poll() returns EINTR at once
  sigaction(SIGINT, &action, &old_int_);
  sigaction(SIGTERM, &action, &old_term_);
}

// After a stop signal the run writes its interrupted report and exits 128 + that signal: a
// second SIGINT or SIGTERM meanwhile is ignored, so it can neither kill the report half-way nor
// rename the interruption (SIGKILL, SIGQUIT and SIGHUP still end the process).
StopSignals::~StopSignals() {
  if (stop_signal) {
    std::signal(SIGINT, SIG_IGN);
    std::signal(SIGTERM, SIG_IGN);
    return;
  }
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

int execute_cases(const StopSignals&, const std::vector<Case>& cases, const RunOptions& options,
                  std::vector<std::optional<json>>& entries, const std::function<void(std::size_t)>& on_finished) {
  const std::size_t jobs = std::size_t(std::max(1, options.jobs));
  std::vector<Child> running;
  std::size_t next = 0;
  double memory_in_use = 0;
  const auto finish = [&](std::size_t k, json entry) {
    entries[running[k].index] = std::move(entry);
    memory_in_use -= running[k].memory;
    const std::size_t index = running[k].index;
    running.erase(running.begin() + std::ptrdiff_t(k));
    on_finished(index);
  };

  while (!stop_signal) {
    // Start cases in order while a job slot and the memory budget allow.
    while (next < cases.size() && entries[next]) ++next;
    while (next < cases.size() && running.size() < jobs) {
      const double memory = case_memory_estimate(cases[next]);
      if (!running.empty() && options.max_memory > 0 && memory_in_use + memory > options.max_memory) break;
      int fds[2];
      if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
      // Its tensors read here, once, and shared with the process (<= 256 MiB; proof/npy.hpp).
      prefetch_case_tensors(cases[next], std::uint64_t(256) << 20);
      std::cout.flush(), std::cerr.flush();
      // Free memory back to the system: blocks freed before the fork would otherwise be shared with
      // the child, each of its first writes a page copy (docs/performance.md, "Page faults").
      malloc_trim(0);
      const pid_t parent = getpid();
      const double parent_resident = anonymous_resident_bytes();
      const pid_t pid = fork();
      if (pid < 0) {
        ::close(fds[0]), ::close(fds[1]);
        throw std::runtime_error(std::string("cannot start a process: ") + std::strerror(errno));
      }
      if (pid == 0) {
        ::close(fds[0]);
        run_child(cases[next], options, fds[1], parent);
      }
      ::close(fds[1]);
      running.push_back({next, pid, fds[0], Clock::now(), memory, parent_resident, {}});
      memory_in_use += memory;
      do ++next;
      while (next < cases.size() && entries[next]);
    }
    if (running.empty()) break;

    // Wait for output, an exit, a deadline or a signal.
    int wait_ms = poll_wait_ms(std::numeric_limits<double>::infinity());
    if (options.timeout_seconds > 0)
      for (const auto& child : running)
        wait_ms = std::min(wait_ms, poll_wait_ms(options.timeout_seconds - seconds_since(child.start)));
    std::vector<pollfd> fds;
    for (const auto& child : running) fds.push_back({child.fd, POLLIN, 0});
    const int ready = poll(fds.data(), fds.size(), wait_ms);
    if (ready < 0 && errno != EINTR) throw std::runtime_error(std::string("poll failed: ") + std::strerror(errno));
    if (stop_signal) break;
    for (std::size_t k = running.size(); k-- > 0;) {
      Child& child = running[k];
      if (ready > 0 && fds[k].revents) {
        char buffer[1 << 16];
        const ssize_t n = ::read(child.fd, buffer, sizeof buffer);
        if (n > 0) {
          child.output.append(buffer, std::size_t(n));
        } else if (n == 0 || errno != EINTR) {
          ::close(child.fd);
          finish(k, finish_child(cases[child.index], child));
          continue;
        }
      }
      if (options.timeout_seconds > 0 && seconds_since(child.start) > options.timeout_seconds) {
        const double seconds = seconds_since(child.start);
        kill_child(child);
        char limit[32];
        std::snprintf(limit, sizeof limit, "%g", options.timeout_seconds);
        finish(k, error_entry(cases[child.index],
                              "timed out: stopped after " + std::string(limit) + " s (--timeout " + limit + ")",
                              seconds));
      }
    }
  }
  for (auto& child : running) kill_child(child);  // interrupted: unfinished cases are not reported
  return stop_signal;
}

}  // namespace attnconv
