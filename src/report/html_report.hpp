#pragma once
// `attnconv html REPORT.json`, `run --html`, `merge --html`: a report as one
// self-contained HTML page (docs/reports.md): CSS, script and
// figures (SVG) inline, nothing loaded from the network; every case in the
// HTML, so it reads without JavaScript, which only sorts, filters and opens
// rows. Every string taken from the report is escaped.
#include <string>

#include <nlohmann/json.hpp>

namespace attnconv {

// The page of `report`; `source` names the report in the page's title.
// Throws InputError for a report without a list of cases.
std::string html_report(const nlohmann::json& report, const std::string& source);

// The page's file beside a report: DIR/report.html for DIR/report.json.
std::string html_path_beside(const std::string& report);

}  // namespace attnconv
