#include "run/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "io/quote.hpp"
#include "proof/verdict.hpp"

namespace attnconv {

std::string format_duration(double seconds) {
  const long total = std::lround(std::max(0.0, seconds));
  char buffer[32];
  if (total >= 3600)
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  else
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld", total / 60, total % 60);
  return buffer;
}

std::string summary_line(const nlohmann::json& summary) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.2f", summary.value("seconds", 0.0));
  std::string verdicts;  // "28 holds, 2 bound holds, 1 fails as predicted": the verdicts that occurred
  const nlohmann::json counts = summary.value("verdicts", nlohmann::json::object());
  for (const Verdict v : all_verdicts)
    if (const std::string verdict = to_string(v); counts.value(verdict, 0LL) > 0)
      verdicts += (verdicts.empty() ? "; " : ", ") + std::to_string(counts.value(verdict, 0LL)) + " " + verdict;
  return std::to_string(summary.value("passed", 0)) + " passed, " + std::to_string(summary.value("failed", 0)) +
         " failed, " + std::to_string(summary.value("errored", 0)) + " errored in " + seconds + " s" +
         verdicts;
}

Progress::Progress(std::size_t total, std::ostream& out, bool live, bool enabled)
    : total_(total), out_(out), live_(live), enabled_(enabled), start_(std::chrono::steady_clock::now()) {}

bool Progress::stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

void Progress::case_finished(const nlohmann::json& entry) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ++done_;
  if (!enabled_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = done_ < total_ ? elapsed / double(done_) * double(total_ - done_) : 0.0;
  const std::string status = entry.value("status", "?");
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f", entry.value("seconds", 0.0));
  const std::string line = "[" + std::to_string(done_) + "/" + std::to_string(total_) + "] " +
                           clip(entry.value("name", "?")) + " " + status + " " + seconds + " s, ETA " + format_duration(eta);
  if (live_) {
    // A line wider than the terminal would wrap, and \r would redraw only its tail.
    winsize size{};
    const std::size_t columns = ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1 ? size.ws_col : 0;
    out_ << "\r\033[K" << (columns && line.size() >= columns ? line.substr(0, columns - 1) : line);
    line_open_ = entry_status(entry) == Status::pass;
    if (!line_open_) out_ << "\n";  // failures stay on screen
  } else {
    out_ << line << "\n";
  }
  out_.flush();
}

void Progress::finish() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (line_open_) out_ << "\r\033[K";
  line_open_ = false;
  out_.flush();
}

}  // namespace attnconv
