#pragma once
// The report contract of docs/design.md, "Reports": schema_version, tool,
// environment, summary, cases.
#include <nlohmann/json.hpp>
#include <string>

namespace attnconv {

using json = nlohmann::json;

inline constexpr int report_schema_version = 1;

json tool_info();    // name, version, git commit
json environment();  // compiler, BLAS, threads, allocator, host, start time (UTC, ISO 8601)

// Recomputes summary counts from report["cases"]; `seconds` is the wall time.
void update_summary(json& report, double seconds);

}  // namespace attnconv
