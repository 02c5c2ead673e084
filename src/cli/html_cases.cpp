#include "cli/html_cases.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

#include "cli/report_figures.hpp"
#include "harness/junit.hpp"
#include "harness/short_number.hpp"
#include "harness/sweep_fit.hpp"

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

// A numeric cell: the shown value and, for sorting, the full one.
std::string number_cell(double value) {
  if (std::isnan(value)) return "<td class=\"n\" data-v=\"\">-</td>";
  char full[32];
  std::snprintf(full, sizeof full, "%.17g", value);
  return "<td class=\"n\" data-v=\"" + std::string(full) + "\">" + short_number(value) + "</td>";
}

// key: value pairs of an object, as rows of a two-column table.
std::string key_table(const std::string& caption, const nlohmann::json& object) {
  if (!object.is_object() || object.empty()) return "";
  std::string out = "<table class=\"kv\"><caption>" + caption + "</caption>";
  for (const auto& [key, value] : object.items())
    out += "<tr><th>" + xml_escape(key) + "</th><td>" + html_json(value) + "</td></tr>";
  return out + "</table>";
}

// Where each tensor came from: drawn from a seed, or loaded (file, bytes, SHA-256).
std::string provenance_table(const nlohmann::json& provenance) {
  if (!provenance.is_object() || provenance.empty()) return "";
  std::string out = "<table class=\"kv\"><caption>tensors</caption>";
  for (const auto& [tensor, source] : provenance.items()) {
    out += "<tr><th>" + xml_escape(tensor) + "</th><td>";
    if (source.is_object() && source.contains("drawn_from_seed"))
      out += "drawn from seed " + html_json(source["drawn_from_seed"]);
    else if (source.is_object() && source.contains("file"))
      out += "loaded from " + html_json(source["file"]) + " (" + text_of(source, "bytes") + " bytes, SHA-256 <code>" +
             text_of(source, "sha256") + "</code>)";
    else
      out += html_json(source);
    out += "</td></tr>";
  }
  return out + "</table>";
}

std::string case_body(const nlohmann::json& c, std::size_t i, const CaseLinks& links) {
  const std::string status = c.value("status", "");
  const std::string name = text_of(c, "name");
  std::string out = "<tbody id=\"" + case_anchor(i) + "\" data-status=\"" + xml_escape(status) +
                    "\"><tr class=\"row\" tabindex=\"0\" aria-expanded=\"false\"><td>" + name + "</td><td>" +
                    text_of(c, "proof") + "</td><td class=\"s " + xml_escape(status) + "\">" + xml_escape(status) +
                    "</td><td>" + text_of(c, "verdict") + "</td>" + number_cell(metric(c, "max_abs")) +
                    number_cell(metric(c, "rel_l2")) + number_cell(metric(c, "bound")) +
                    number_cell(c.value("seconds", nlohmann::json()).is_number() ? c["seconds"].get<double>() : std::nan("")) +
                    "</tr><tr class=\"more\"><td colspan=\"8\"><details><summary>details of " + name +
                    "</summary><p class=\"msg\">" + text_of(c, "message") + "</p>";
  nlohmann::json about = nlohmann::json::object();
  for (const char* key : {"file", "expect", "tolerance", "sweep_group", "sweep_point"})
    if (c.contains(key) && !(c[key].is_object() && c[key].empty())) about[key] = c[key];
  out += "<div class=\"tables\">" + key_table("case", about) + key_table("params", c["params"]) +
         key_table("metrics", c.value("metrics", nlohmann::json::object())) +
         provenance_table(c.value("provenance", nlohmann::json::object())) + "</div>";
  if (const auto sweep = links.sweep_anchor.find(alpha_sweep_group(c)); sweep != links.sweep_anchor.end())
    out += "<p><a href=\"#" + sweep->second + "\">its alpha sweep and fit</a></p>";
  if (const auto figures = links.figures.find(&c); figures != links.figures.end())
    out += "<div class=\"figs\">" + figures->second + "</div>";
  return out + "</details></td></tr></tbody>\n";
}

}  // namespace

std::string html_cases_table(const nlohmann::json& cases, const CaseLinks& links) {
  static constexpr const char* columns[][2] = {{"name", ""},  {"proof", ""},  {"status", ""},      {"verdict", ""},
                                               {"max_abs", "n"}, {"rel_l2", "n"}, {"bound", "n"}, {"seconds", "n"}};
  std::string out = "<table id=\"cases\"><thead><tr>";
  for (const auto& [label, kind] : columns)
    out += std::string("<th") + (*kind ? " data-num=\"1\"" : "") + "><button type=\"button\">" + label + "</button></th>";
  out += "</tr></thead>\n";
  // failed and errored first (README: what a reader looks for), each in report order
  for (const char* status : {"fail", "error", ""})
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const std::string s = cases[i].value("status", "");
      if (*status ? s == status : s != "fail" && s != "error") out += case_body(cases[i], i, links);
    }
  return out + "</table>";
}

}  // namespace attnconv
