#pragma once
// Runs cases in child processes (fork): up to `jobs` at once, each stopped
// after `timeout_seconds`, a crash (a signal) isolated to its case. Each
// child runs run_case() and sends its report entry back over a pipe. SIGINT
// and SIGTERM stop the run: running cases are killed, finished ones kept.
#include <csignal>
#include <functional>
#include <optional>
#include <vector>

#include "run/case_run.hpp"

namespace attnconv {

// SIGINT and SIGTERM handlers for its lifetime: the first of them delivered stops the run and is
// what execute_cases() returns (a second changes nothing; the handler runs with both blocked).
// At its end, after a stop both stay ignored (the interrupted report is being written), else the
// handlers before return.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

// Fills entries[i] (one slot per case) for every case whose slot is empty,
// in case order as far as starting goes, calling on_finished(i) as each case
// finishes. Returns the signal that interrupted the run, or 0.
int execute_cases(const StopSignals& installed, const std::vector<Case>& cases, const RunOptions& options,
                  std::vector<std::optional<json>>& entries, const std::function<void(std::size_t)>& on_finished);

// How long the parent sleeps in poll() for a case with `seconds_left` before
// its deadline: at most 200 ms (to notice exits and signals), down to 0 at the
// deadline; a positive wait for any positive time left, however large.
int poll_wait_ms(double seconds_left);

// "SIGSEGV (Segmentation fault)"
std::string signal_description(int signal);

}  // namespace attnconv
