#pragma once
// The table of cases of the HTML page: one <tbody> per case holding its row
// (name, proof, status, verdict, max_abs, rel_l2, bound, seconds) and a
// <details> with its params, metrics, message, tensors' provenance and
// figures. Failed and errored cases first, then the others in report order.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace attnconv {

struct CaseLinks {
  std::map<const nlohmann::json*, std::string> figures;  // a case's figures, as SVG
  std::map<std::string, std::string> sweep_anchor;        // alpha sweep group -> its figure's id
};

std::string html_cases_table(const nlohmann::json& cases, const CaseLinks& links);

// The id of case i (report order) in the page.
std::string case_anchor(std::size_t i);

// `value` as compact JSON, escaped for HTML.
std::string html_json(const nlohmann::json& value);

// A number of a table cell: three significant digits; NaN as "-".
std::string html_number(double value);

}  // namespace attnconv
