#include "report/html_cases.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "parallel/threads.hpp"
#include "report/report_figures.hpp"
#include "report/junit.hpp"
#include "proof/short_number.hpp"
#include "report/sweep_fit.hpp"
#include "proof/verdict.hpp"

namespace attnconv {

std::string case_anchor(std::size_t i) { return "case-" + std::to_string(i); }

std::string html_json(const nlohmann::json& value) {
  return xml_escape(value.is_string() ? value.get<std::string>()
                                      : value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string html_number(double value) { return std::isnan(value) ? "-" : short_number(value); }

namespace {

std::string text_of(const nlohmann::json& c, const char* key) {
  return c.contains(key) ? html_json(c[key]) : std::string();
}

// A numeric cell (its end tag implied, HTML 13.1.2.4): the shown value and,
// for sorting, the full one.
std::string number_cell(double value) {
  if (std::isnan(value)) return "<td data-v=\"\">-";
  return "<td data-v=" + nlohmann::json(value).dump() + ">" + short_number(value);  // a JSON number needs no quotes
}

// A value as the details show it: a floating-point number with 6 significant
// digits (report.json holds every digit, and the row sorts by them).
std::string shown(const nlohmann::json& value) {
  if (!value.is_number_float()) return html_json(value);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", value.get<double>());
  return buffer;
}

// key: value lines of an object under a caption, for a <pre>.
std::string key_lines(const std::string& caption, const nlohmann::json& object) {
  if (!object.is_object() || object.empty()) return "";
  std::string out = "<b>" + caption + "</b>\n";
  for (const auto& [key, value] : object.items()) out += xml_escape(key) + ": " + shown(value) + "\n";
  return out;
}

// Where each tensor came from, tensors of one source on one line: drawn from
// a seed, or loaded (file, bytes, SHA-256).
std::string provenance_lines(const nlohmann::json& provenance) {
  if (!provenance.is_object() || provenance.empty()) return "";
  std::vector<std::pair<std::string, std::string>> sources;  // source, its tensors
  for (const auto& [tensor, source] : provenance.items()) {
    std::string text;
    if (source.is_object() && source.contains("drawn_from_seed"))
      text = "drawn from seed " + html_json(source["drawn_from_seed"]);
    else if (source.is_object() && source.contains("file"))
      text = "loaded from " + html_json(source["file"]) + " (" + text_of(source, "bytes") + " bytes, SHA-256 " +
             text_of(source, "sha256") + ")";
    else
      text = html_json(source);
    const auto same = std::find_if(sources.begin(), sources.end(), [&](const auto& s) { return s.first == text; });
    if (same == sources.end())
      sources.push_back({text, xml_escape(tensor)});
    else
      same->second += ", " + xml_escape(tensor);
  }
  std::string out = "<b>tensors</b>\n";
  for (const auto& [text, tensors] : sources) out += tensors + ": " + text + "\n";
  return out;
}

std::string case_body(const nlohmann::json& c, std::size_t i, const CaseLinks& links, bool detailed) {
  std::string out = "<tbody id=" + case_anchor(i) + " data-status=\"" + xml_escape(c.value("status", "")) +
                    "\"><tr class=row><td>" + text_of(c, "name") + "<td>" + text_of(c, "proof") + "<td>" +
                    text_of(c, "status") + "<td>" + text_of(c, "verdict") + number_cell(metric_value(c, "max_abs")) +
                    number_cell(metric_value(c, "rel_l2")) + number_cell(metric_value(c, "bound")) +
                    number_cell(c.value("seconds", nlohmann::json()).is_number() ? c["seconds"].get<double>() : std::nan("")) +
                    "<tr><td colspan=8><details><summary>details</summary><p class=msg>" + text_of(c, "message") + "</p>";
  if (!detailed) return out + "<p class=omit>" + links.omitted + "</p></details>\n";
  nlohmann::json about = nlohmann::json::object();
  for (const char* key : {"file", "expect", "tolerance"})  // the name holds the sweep point
    if (c.contains(key) && !(c[key].is_object() && c[key].empty())) about[key] = c[key];
  // one block, flowing into columns (html_assets.cpp, pre.kv)
  out += "<pre class=kv>" + key_lines("case", about) + key_lines("params", c["params"]) +
         key_lines("metrics", c.value("metrics", nlohmann::json::object())) +
         provenance_lines(c.value("provenance", nlohmann::json::object())) + "</pre>";
  if (const auto sweep = links.sweep_anchor.find(alpha_sweep_group(c)); sweep != links.sweep_anchor.end())
    out += "<a href=\"#" + sweep->second + "\">its alpha sweep</a>";
  if (const auto figures = links.figures.find(&c); figures != links.figures.end())
    out += "<div class=figs>" + figures->second + "</div>";
  return out + "</details>\n";  // the end tags of td, tr and tbody implied (HTML 13.1.2.4)
}

}  // namespace

std::vector<std::size_t> table_order(const nlohmann::json& cases) {
  std::vector<std::size_t> order;
  order.reserve(cases.size());
  const auto failed = [](const json& c) { return entry_status(c) == Status::fail || entry_status(c) == Status::error; };
  for (const std::optional<Status> status : {std::optional(Status::fail), std::optional(Status::error), std::optional<Status>()})
    for (std::size_t i = 0; i < cases.size(); ++i)
      if (status ? entry_status(cases[i]) == status : !failed(cases[i])) order.push_back(i);
  return order;
}

void html_cases_table(const nlohmann::json& cases, const CaseLinks& links, const std::function<void(std::string_view)>& sink) {
  static constexpr const char* columns[][2] = {{"name", ""},  {"proof", ""},  {"status", ""},      {"verdict", ""},
                                               {"max_abs", "n"}, {"rel_l2", "n"}, {"bound", "n"}, {"seconds", "n"}};
  // fixed column widths: the browser lays out 10 000 rows without measuring each (html_assets.cpp)
  std::string out = "<table id=\"cases\"><colgroup><col style=\"width:27%\"><col style=\"width:18%\"><col style=\"width:6%\">"
                    "<col style=\"width:11%\"><col span=\"4\" style=\"width:9.5%\"></colgroup><thead><tr>";
  for (const auto& [label, kind] : columns)
    out += std::string("<th") + (*kind ? " data-num=\"1\"" : "") + "><button type=\"button\">" + label + "</button></th>";
  sink(out + "</tr></thead>\n");
  const std::vector<std::size_t> order = table_order(cases);  // what a reader looks for first
  // A block of rows made on the engine threads (each row reads only its case
  // and the links), then written in table order: the same page for any thread
  // count, at most a block of rows held at once.
  constexpr std::size_t block = 2048;
  std::vector<std::string> bodies;
  for (std::size_t first = 0; first < order.size(); first += block) {
    bodies.assign(std::min(block, order.size() - first), std::string());
    parallel_for(bodies.size(), [&](std::size_t i, std::size_t) {
      const std::size_t k = first + i;
      bodies[i] = case_body(cases[order[k]], order[k], links, k < links.details);
    });
    for (const std::string& body : bodies) sink(body);
  }
  sink("</table>");
}

}  // namespace attnconv
