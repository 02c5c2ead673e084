#include "report/report_figures.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "io/errors.hpp"
#include "cases/name_filter.hpp"
#include "proof/proof.hpp"
#include "report/sweep_fit.hpp"

namespace attnconv {

namespace {

bool selected(const nlohmann::json& c, const std::string& filter) {
  return c.value("status", "") != "error" && (filter.empty() || name_matches(filter, c.value("name", "")));
}

// A case of a report as its proof reads it: the params as run (defaults
// filled in); its tensors drawn from the seed.
Case report_case(const nlohmann::json& c) {
  Case out;
  out.name = c.value("name", "");
  out.base_name = c.value("sweep_group", out.name);
  out.proof = c.value("proof", "");
  out.params = without_retired(*find_proof(out.proof), c["params"]);
  out.request.expect = c.value("expect", "hold") == "fail" ? Expect::fail : Expect::hold;
  // The tensors the case loaded, from the same files (checked against their SHA-256).
  out.file = c.value("file", "");
  out.weights = c.value("weights", nlohmann::json::object());
  out.provenance = c.value("provenance", nlohmann::json::object());
  out.batch = c.value("batch", std::size_t(0));  // the input's samples, as the run found them
  return out;
}

}  // namespace

void check_report_cases(const nlohmann::json& report, const std::string& command) {
  if (!report.is_object() || !report.contains("cases") || !report["cases"].is_array())
    throw InputError(command + ": not an attnconv report (no \"cases\" list)");
  for (const auto& c : report["cases"])
    if (!c.is_object() || !c.contains("name") || !c.contains("proof") || !c.contains("status") || !c.contains("params"))
      throw InputError(command + ": not an attnconv report (a case without name, proof, status or params): " +
                       c.dump().substr(0, 120));
}

double metric_value(const nlohmann::json& c, const std::string& key) {
  const auto& m = c.value("metrics", nlohmann::json::object());
  return m.contains(key) && m[key].is_number() ? m[key].get<double>() : std::nan("");
}

std::vector<AlphaSweep> alpha_sweeps(const nlohmann::json& report, const std::string& filter) {
  std::map<std::string, std::vector<const nlohmann::json*>> groups;
  for (const auto& c : report["cases"])
    if (selected(c, filter))
      if (const std::string group = alpha_sweep_group(c); !group.empty()) groups[group].push_back(&c);
  // The fits of the report (older reports: fitted here, the same way).
  const nlohmann::json fits = report.contains("sweep_fits") ? report["sweep_fits"] : fit_sweeps(report["cases"]);
  std::map<std::string, const nlohmann::json*> fit_of;  // group -> its fit (the last, as before)
  for (const auto& candidate : fits) fit_of[candidate.value("group", "")] = &candidate;
  std::vector<AlphaSweep> sweeps;
  for (auto& [group, cases] : groups) {
    if (cases.size() < 2) continue;
    std::sort(cases.begin(), cases.end(), [](const auto* a, const auto* b) {
      return (*a)["sweep_point"]["alpha"].template get<double>() < (*b)["sweep_point"]["alpha"].template get<double>();
    });
    const auto fit = fit_of.find(group);
    sweeps.push_back({group, cases, fit == fit_of.end() ? nlohmann::json() : *fit->second});
  }
  return sweeps;
}

std::vector<const nlohmann::json*> figure_cases(const nlohmann::json& report, const std::string& filter) {
  std::vector<const nlohmann::json*> out;
  std::set<std::string> groups;
  for (const auto& c : report["cases"]) {
    if (!selected(c, filter)) continue;
    const ProofDef* def = find_proof(c.value("proof", ""));
    if (def && def->figures &&
        (def->figures_per_case || groups.insert(c.value("sweep_group", c.value("name", ""))).second))
      out.push_back(&c);
  }
  return out;
}

std::vector<FigureData> case_figures(const nlohmann::json& c, std::ostream& notes) {
  const std::string name = c.value("name", "");
  try {
    Case prepared = report_case(c);
    prepare_case(prepared);
    std::vector<FigureData> figures = find_proof(prepared.proof)->figures(prepared, c.value("metrics", nlohmann::json::object()));
    if (figures.empty()) notes << name << ": its proof supplied no figure\n";
    return figures;
  } catch (const std::exception& e) {  // params or metrics not as this version of the proof knows them
    notes << name << ": no figure: " << e.what() << "\n";
    return {};
  }
}

std::vector<CaseFigures> proof_figures(const nlohmann::json& report, std::ostream& notes, const std::string& filter) {
  std::vector<CaseFigures> out;
  for (const nlohmann::json* c : figure_cases(report, filter))
    if (std::vector<FigureData> figures = case_figures(*c, notes); !figures.empty()) out.push_back({c, std::move(figures)});
  return out;
}

}  // namespace attnconv
