#pragma once
// The figures of a report as inline SVG for the HTML page, from the same data
// `attnconv plot` gives gnuplot (report/report_figures.hpp): the same series,
// colours and titles, drawn without any program or network.
#include <string>

#include "report/report_figures.hpp"

namespace attnconv {

// max |MHSA - conv| against alpha on a log scale, with the bound and the
// fitted line ln(max_abs) = intercept + slope * alpha over the points it used.
std::string svg_alpha_sweep(const AlphaSweep& sweep);

// A figure a proof supplies: a grid of heat maps or stacked bars.
std::string svg_figure(const FigureData& figure);

}  // namespace attnconv
