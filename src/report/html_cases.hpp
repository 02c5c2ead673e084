#pragma once
// The table of cases of the HTML page: one <tbody> per case holding its row
// (name, proof, status, verdict, max_abs, rel_l2, bound, seconds) and a
// <details> with its params, metrics, message, tensors' provenance and
// figures. Failed and errored cases first, then the others in report order.
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnconv {

struct CaseLinks {
  std::map<const nlohmann::json*, std::string> figures;  // a case's figures, as SVG
  std::map<std::string, std::string> sweep_anchor;        // alpha sweep group -> its figure's id
  // The first `details` cases of the table show their params, metrics and
  // provenance; the others only their message and `omitted` (a note on how to
  // see them).
  std::size_t details = std::size_t(-1);
  std::string omitted;
};

// The table, passed to `out` a case at a time.
void html_cases_table(const nlohmann::json& cases, const CaseLinks& links, const std::function<void(std::string_view)>& out);

// The table's order of the cases (indices in report order): failed, then
// errored, then the others, each in report order.
std::vector<std::size_t> table_order(const nlohmann::json& cases);

// The id of case i (report order) in the page.
std::string case_anchor(std::size_t i);

// `value` as compact JSON, escaped for HTML.
std::string html_json(const nlohmann::json& value);

// A number of a table cell: three significant digits; NaN as "-".
std::string html_number(double value);

}  // namespace attnconv
