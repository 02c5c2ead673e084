#include "report/html_report.hpp"

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "report/html_assets.hpp"
#include "report/html_cases.hpp"
#include "report/report_figures.hpp"
#include "report/svg_figure.hpp"
#include "report/junit.hpp"
#include "proof/short_number.hpp"
#include "proof/verdict.hpp"

namespace attnconv {

namespace {

using nlohmann::json;

std::string field(const json& object, const char* key) {
  return object.is_object() && object.contains(key) ? html_json(object[key]) : "-";
}

// Verdict counts, provenance of the run, and the files its cases loaded.
std::string header(const json& report, const std::string& source) {
  const json summary = report.value("summary", json::object());
  std::string out = "<header><h1>attnconv report</h1><p>" + xml_escape(source) + "</p><p class=\"counts\">";
  for (const char* status : {"passed", "failed", "errored", "total"})
    out += std::string("<span class=\"") + (status[0] == 'p' ? "pass" : status[0] == 'f' ? "fail" : status[0] == 'e' ? "error" : "") +
           "\">" + field(summary, status) + " " + status + "</span>";
  const json verdicts = summary.value("verdicts", json::object());
  for (const Verdict v : all_verdicts)
    if (const std::string name = to_string(v); verdicts.value(name, 0) > 0)
      out += "<span>" + field(verdicts, name.c_str()) + " " + xml_escape(name) + "</span>";
  out += "<span>" + (summary.value("seconds", json()).is_number() ? short_number(summary["seconds"].get<double>()) : "-") +
         " s</span></p>";
  if (report.value("interrupted", false))
    out += "<p class=\"banner\">interrupted by " + field(report, "interrupted_by") + ": " +
           std::to_string(report.value("not_run", json::array()).size()) + " cases not run</p>";
  const json tool = report.value("tool", json::object()), env = report.value("environment", json::object()),
             run = report.value("run", json::object());
  const std::vector<std::tuple<const char*, const json*, const char*>> rows{
      {"tool", &tool, "name"},           {"version", &tool, "version"},       {"commit", &tool, "git_commit"},
      {"compiler", &env, "compiler"},    {"BLAS", &env, "blas"},              {"BLAS threads", &env, "blas_threads"},
      {"engine threads", &env, "engine_threads"}, {"allocator", &env, "allocator"},
      {"host", &env, "host"},            {"start time", &env, "start_time"},
      {"jobs", &run, "jobs"}};
  out += "<div class=\"tables\"><table class=\"kv\" id=\"provenance\"><caption>provenance</caption>";
  for (const auto& [label, object, key] : rows)
    out += std::string("<tr><th>") + label + "</th><td>" + field(*object, key) + "</td></tr>";
  if (report.contains("shard")) out += "<tr><th>shard</th><td>" + html_json(report["shard"].value("index", json())) + " of " +
                                       html_json(report["shard"].value("count", json())) + "</td></tr>";
  out += "</table>";
  // the loaded files, once each
  std::map<std::string, std::pair<std::string, std::string>> files;  // file -> bytes, sha256
  for (const auto& c : report["cases"]) {
    const json provenance = c.value("provenance", json::object());
    for (const auto& [tensor, source] : provenance.items())
      if (source.is_object() && source.contains("file") && source.contains("sha256"))
        files[source["file"].dump()] = {field(source, "bytes"), field(source, "sha256")};
  }
  if (!files.empty()) {
    out += "<details id=\"loaded\"><summary>the cases loaded " + std::to_string(files.size()) +
           " files: their SHA-256</summary><table class=\"kv grid\"><tr><th>file</th><th>bytes</th><th>SHA-256</th></tr>";
    for (const auto& [file, about] : files)
      out += "<tr><td>" + html_json(json::parse(file)) + "</td><td>" + about.first + "</td><td><code>" + about.second +
             "</code></td></tr>";
    out += "</table></details>";
  }
  return out + "</div></header>";
}

// The alpha sweeps: a table of their fits and a figure for each of the first
// `figures` (the others' rows take their id).
std::string sweeps_section(const std::vector<AlphaSweep>& sweeps, std::size_t figures) {
  std::string out = "<section id=\"sweeps\" class=\"sweeps\"><h2>Sweep fits</h2>";
  if (sweeps.empty()) return out + "<p>No alpha sweep in this report.</p></section>";
  out += "<p>Least squares of ln(max_abs) against alpha over the points above round-off; Theorem 1's finite-alpha "
         "error decays like e<sup>-alpha</sup>, a slope near -1.</p><table class=\"grid\"><tr><th>group</th>"
         "<th>points used</th><th>slope</th><th>intercept</th></tr>";
  for (std::size_t k = 0; k < sweeps.size(); ++k) {
    const json& fit = sweeps[k].fit;
    const auto number = [&](const char* key) {
      return fit.is_object() && fit.value(key, json()).is_number() ? html_number(fit[key].get<double>()) : "-";
    };
    const std::string id = "sweep-" + std::to_string(k);
    out += (k < figures ? "<tr><td><a href=\"#" + id + "\">" + xml_escape(sweeps[k].group) + "</a>"
                        : "<tr id=\"" + id + "\"><td>" + xml_escape(sweeps[k].group)) + "</td><td>" +
           field(fit, "points_used") + " of " + field(fit, "points_total") + "</td><td>" + number("slope") + "</td><td>" +
           number("intercept") + "</td></tr>";
  }
  out += "</table>";
  for (std::size_t k = 0; k < sweeps.size() && k < figures; ++k)
    out += "<figure id=\"sweep-" + std::to_string(k) + "\">" + svg_alpha_sweep(sweeps[k]) + "</figure>";
  return out + "</section>";
}

// The findings list at most this many cases of each verdict.
constexpr std::size_t max_findings_listed = 1000;

// What the page leaves out (HtmlLimits), and how to get it; empty when nothing is.
std::string omitted_note(const std::string& source, std::size_t cases, std::size_t details, std::size_t figures_drawn,
                         std::size_t figures_omitted, std::size_t sweeps_omitted) {
  if (details >= cases && !figures_omitted && !sweeps_omitted) return "";
  std::string out = "<p class=\"banner\" id=\"omitted\">This page is shortened for its " + std::to_string(cases) + " cases:";
  if (details < cases)
    out += " the params, metrics and provenance of the first " + std::to_string(details) +
           " cases of the table (failed and errored first) are shown, not those of the other " +
           std::to_string(cases - details) + ";";
  if (figures_omitted)
    out += " the figures of " + std::to_string(figures_drawn) + " cases are drawn, those of " +
           std::to_string(figures_omitted) + " others omitted;";
  if (sweeps_omitted) out += " the figures of " + std::to_string(sweeps_omitted) + " alpha sweeps are omitted;";
  return out + " report.json holds everything. <code>attnconv html " + xml_escape(source) +
         " --figures all --details all</code> writes the whole page (large), <code>attnconv plot " + xml_escape(source) +
         " --filter NAME</code> draws the figures of the cases named.</p>";
}

// The messages of the cases whose claim fails, errs, or holds only in part
// (its bound holds, the claim is approached, not reached).
std::string findings_section(const json& cases) {
  std::string out = "<section id=\"findings\" class=\"findings\"><h2>Findings</h2>";
  bool any = false;
  for (const Verdict verdict : {Verdict::fails, Verdict::error, Verdict::fails_as_predicted, Verdict::bound_holds}) {
    std::string items;
    std::size_t count = 0;
    for (std::size_t i = 0; i < cases.size(); ++i)
      if (entry_verdict(cases[i]) == verdict && ++count <= max_findings_listed)
        items += "<li><a href=\"#" + case_anchor(i) + "\">" + html_json(cases[i].value("name", json())) +
                 "</a>: " + html_json(cases[i].value("message", json())) + "</li>";
    if (!count) continue;
    if (count > max_findings_listed)
      items += "<li>and " + std::to_string(count - max_findings_listed) +
               " more: the cases table lists them all (its text filter finds a verdict)</li>";
    any = true;
    const bool open = verdict == Verdict::fails || verdict == Verdict::error;
    out += std::string("<details") + (open ? " open" : "") + "><summary>" + to_string(verdict) + " (" +
           std::to_string(count) + ")</summary><ul>" + items + "</ul></details>";
  }
  return out + (any ? "" : "<p>Every case's claim holds to round-off.</p>") + "</section>";
}

}  // namespace

std::string html_path_beside(const std::string& report) {
  return (std::filesystem::path(report).parent_path() / "report.html").string();
}

std::optional<std::size_t> parse_html_limit(const std::string& text) {
  if (text == "all") return HtmlLimits::all;
  if (text.empty() || text.size() > 12 || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoull(text);
}

std::string html_report(const json& report, const std::string& source, const HtmlLimits& limits) {
  std::string page;
  write_html_report(report, source, limits, [&](std::string_view piece) { page += piece; });
  return page;
}

void write_html_report(const json& report, const std::string& source, const HtmlLimits& limits,
                       const std::function<void(std::string_view)>& out) {
  check_report_cases(report, "html");
  const json& cases = report["cases"];
  const std::vector<AlphaSweep> sweeps = alpha_sweeps(report);
  CaseLinks links;
  links.details = limits.details;
  links.omitted = "Its params and metrics are in the report (see the note above the table).";
  for (std::size_t k = 0; k < sweeps.size(); ++k) links.sweep_anchor[sweeps[k].group] = "sweep-" + std::to_string(k);
  // The figures of the first `limits.figures` cases of the table that have any (failed first).
  std::set<const json*> drawable;
  for (const json* c : figure_cases(report)) drawable.insert(c);
  std::ostringstream notes;  // a case its proof cannot draw keeps its row, without figures
  std::size_t drawn = 0, tried = 0;
  for (const std::size_t i : table_order(cases)) {
    if (drawn >= limits.figures) break;
    if (!drawable.count(&cases[i])) continue;
    ++tried;
    const std::vector<FigureData> figures = case_figures(cases[i], notes);
    for (const FigureData& figure : figures) links.figures[&cases[i]] += "<figure>" + svg_figure(figure) + "</figure>";
    drawn += !figures.empty();
  }
  const std::size_t sweeps_omitted = sweeps.size() > limits.figures ? sweeps.size() - limits.figures : 0;

  out("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
         "script-src 'unsafe-inline'; img-src data:\">"
         "<meta name=\"viewport\" content=\"width=device-width\"><link rel=\"icon\" href=\"data:,\">"
         // with scripts, the details rows are hidden from the first layout on (html_assets.cpp)
         "<script>document.documentElement.classList.add(\"js\")</script><title>attnconv report: " +
         xml_escape(source) + "</title><style>" + html_style + "</style></head><body>" + header(report, source) +
         "<nav><a href=\"#cases-section\">cases</a><a href=\"#sweeps\">sweep fits</a><a href=\"#findings\">findings</a></nav>"
         "<section id=\"cases-section\"><h2>Cases</h2><p>Failed and errored cases first. A row opens its details; a "
         "column header sorts.</p><div id=\"controls\" hidden><label>filter <input id=\"filter-text\" type=\"search\" "
         "placeholder=\"name, proof, verdict, message\"></label> <label>status <select id=\"filter-status\">"
         "<option value=\"\">all</option><option value=\"pass\">pass</option><option value=\"fail\">fail</option><option value=\"error\">error</option></select>"
         "</label> <span id=\"shown\" aria-live=\"polite\"></span></div>" +
         omitted_note(source, cases.size(), limits.details, drawn, drawable.size() - tried, sweeps_omitted));
  html_cases_table(cases, links, out);
  out("</section>" + sweeps_section(sweeps, limits.figures) + findings_section(cases) + "<script>" + html_script +
      "</script></body></html>\n");
}

}  // namespace attnconv
