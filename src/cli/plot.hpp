#pragma once
// `attnconv plot REPORT [--out DIR]`: figures from a report, drawn by gnuplot
// (a data file and a script per figure are written beside the images, so a
// figure can be restyled by editing its .gp and re-running gnuplot):
// - every alpha sweep: max |MHSA - conv| against alpha on a log scale, with
//   the bound and the fitted slope d ln(max_abs) / d alpha;
// - every sweep group of a proof that supplies figures (ProofDef::figures):
//   the proof's heat maps, computed by the proof from the case's params (for
//   Theorem 1: the attention probabilities of each head of the layer it
//   checks, for one query pixel, a K1 x K2 grid);
// - every acmix2022.cost_table case: Stage I / Stage II multiply-adds as bars.
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
