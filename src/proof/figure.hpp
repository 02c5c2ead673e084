#pragma once
// The data of a figure a proof supplies for `attnconv plot` (ProofDef::figures):
// what to draw, computed by the proof from the case and its metrics; the plot
// command only draws.
#include <array>
#include <optional>
#include <string>
#include <variant>
#include <vector>
#include <xtensor/xtensor.hpp>

namespace attnconv {

// One heat map: values[i, j] drawn at row i, column j.
struct HeatMap {
  std::string title;
  xt::xtensor<double, 2> values;
};

// A grid of heat maps sharing a colour range, a window and a marked cell.
struct HeatMapGrid {
  std::array<int, 2> layout{1, 1};     // rows, columns of panels
  std::vector<HeatMap> panels;         // row-major in the layout
  std::array<double, 2> range{0, 1};   // the colour range
  std::optional<std::array<int, 2>> marker;  // a cell (row, column) boxed in every panel
  std::optional<std::array<int, 4>> window;  // rows [r0, r1], columns [c0, c1] shown; none: all
};

// One bar per category, stacked from its series: values[i, s] is series s of
// category i.
struct StackedBars {
  std::vector<std::string> categories;
  std::vector<std::string> series;
  xt::xtensor<double, 2> values;
  std::string y_label;
};

struct FigureData {
  std::string name;   // file name stem, e.g. "attention-<case>"
  std::string title;  // may contain '\n'
  std::variant<HeatMapGrid, StackedBars> content;
};

}  // namespace attnconv
