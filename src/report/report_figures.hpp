#pragma once
// What a report's figures show, drawn by `attnconv plot` (gnuplot) and by the
// HTML page (inline SVG) from the same data:
// - every alpha sweep: its cases in order of alpha and the report's fit
//   (src/report/sweep_fit.hpp);
// - the figures a proof supplies (ProofDef::figures) for the first case of
//   each sweep group, or every case (ProofDef::figures_per_case).
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "proof/figure.hpp"

namespace attnconv {

// Throws InputError unless `report` has a "cases" list whose entries have a
// name, proof, status and params; `command` starts the message.
void check_report_cases(const nlohmann::json& report, const std::string& command);

struct AlphaSweep {
  std::string group;                      // alpha_sweep_group of its cases
  std::vector<const nlohmann::json*> cases;  // sorted by alpha, at least 2
  nlohmann::json fit;                     // the report's fit of the group, or null
};

// The alpha sweeps of the cases that ran and whose name matches `filter`
// (a glob; empty: all).
std::vector<AlphaSweep> alpha_sweeps(const nlohmann::json& report, const std::string& filter = "");

struct CaseFigures {
  const nlohmann::json* c;
  std::vector<FigureData> figures;
};

// The cases that ran, match `filter` and whose proof draws figures for them
// (the first of each sweep group, or every case), in report order.
std::vector<const nlohmann::json*> figure_cases(const nlohmann::json& report, const std::string& filter = "");

// The figures the proof of case entry `c` (one of figure_cases) supplies; a
// case its proof cannot draw (params of another version) is noted on `notes`
// and has none.
std::vector<FigureData> case_figures(const nlohmann::json& c, std::ostream& notes);

// case_figures of every figure_cases entry that has figures.
std::vector<CaseFigures> proof_figures(const nlohmann::json& report, std::ostream& notes, const std::string& filter = "");

// The value of metric `key` of case entry `c`, NaN when it has none.
double metric_value(const nlohmann::json& c, const std::string& key);

}  // namespace attnconv
