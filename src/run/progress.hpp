#pragma once
// One progress line per finished case on stderr: index/total, name, status,
// seconds and the estimated time left. On a terminal the line is redrawn in
// place (failures and errors stay on screen); elsewhere (CI logs, Slurm
// output files) every case gets a plain line.
#include <chrono>
#include <cstddef>
#include <mutex>
#include <ostream>

#include <nlohmann/json.hpp>

namespace attnconv {

class Progress {
 public:
  // `live`: redraw one line (stderr is a terminal); `enabled` false prints nothing.
  Progress(std::size_t total, std::ostream& out, bool live, bool enabled = true);

  // `entry`: the report entry of a finished case (name, status, seconds).
  void case_finished(const nlohmann::json& entry);

  // Clears a live line; call before printing the summary.
  void finish();

  // Whether stderr is a terminal.
  static bool stderr_is_terminal();

 private:
  std::size_t total_, done_ = 0;
  std::ostream& out_;
  bool live_, enabled_, line_open_ = false;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
};

// "H:MM:SS" or "M:SS".
std::string format_duration(double seconds);

// "N passed, N failed, N errored in S s; N holds, N bound holds, ..." from a
// report's summary (the verdicts that occurred, in verdict_names order).
std::string summary_line(const nlohmann::json& summary);

}  // namespace attnconv
