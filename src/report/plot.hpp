#pragma once
// `attnconv plot REPORT [--out DIR]`: figures from a report, drawn by gnuplot
// (a data file and a script per figure are written beside the images, so a
// figure can be restyled by editing its .gp and re-running gnuplot):
// - every alpha sweep: max |MHSA - conv| against alpha on a log scale, with
//   the bound and the fitted slope d ln(max_abs) / d alpha;
// - the figures a proof supplies (ProofDef::figures), for the first case of
//   each sweep group (or every case, ProofDef::figures_per_case), computed by
//   the proof from the case's params and metrics: grids of heat maps (the
//   attention probabilities of each head of a checked layer) or stacked bars
//   (multiply-adds by stage); plot only draws them.
// Each figure as PNG and SVG.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnconv {

struct PlotOptions {
  std::string out_dir = "figures";
  std::string filter;              // glob on case names; empty: all
  std::string gnuplot = "gnuplot";
};

// Returns the images written. Throws InputError for a bad report,
// std::runtime_error when gnuplot fails.
std::vector<std::string> plot_report(const nlohmann::json& report, const PlotOptions& options);

}  // namespace attnconv
