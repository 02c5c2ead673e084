#pragma once
// `attnconv html REPORT.json`, `run --html`, `merge --html`: a report as one
// self-contained HTML page (docs/reports.md): CSS, script and
// figures (SVG) inline, nothing loaded from the network; every case in the
// HTML (its details and figures up to HtmlLimits), so it reads without
// JavaScript, which only sorts, filters and opens rows. Every string taken
// from the report is escaped.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace attnconv {

// What a page of many cases leaves out, so that its size stays in proportion
// to what a reader opens (docs/reports.md, "A report as a web page"): the
// figures of all but the first `figures` cases of the table (failed first) and
// of all but the first `figures` alpha sweeps, the params, metrics and
// provenance of all but the first `details` cases. A note above the table
// says what is left out and how to get it.
struct HtmlLimits {
  static constexpr std::size_t all = std::size_t(-1);
  std::size_t figures = 100;
  std::size_t details = 20000;
};

// The page of `report`; `source` names the report in the page's title.
// Throws InputError for a report without a list of cases.
std::string html_report(const nlohmann::json& report, const std::string& source, const HtmlLimits& limits = {});

// The same page passed to `out` piece by piece (a case at a time), for a
// writer that never holds the whole page.
void write_html_report(const nlohmann::json& report, const std::string& source, const HtmlLimits& limits,
                       const std::function<void(std::string_view)>& out);

// A limit as `--figures` and `--details` take it: a count, or "all"; empty
// when `text` is neither.
std::optional<std::size_t> parse_html_limit(const std::string& text);

// The page's file beside a report: DIR/report.html for DIR/report.json.
std::string html_path_beside(const std::string& report);

}  // namespace attnconv
