#include "report/svg_figure.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <variant>

#include "report/junit.hpp"
#include "proof/short_number.hpp"

namespace attnconv {

namespace {

// A coordinate or a length in SVG user units.
std::string px(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", value);
  return buffer;
}

std::string text(double x, double y, const std::string& content, const std::string& attributes = "") {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\"" + attributes + ">" + xml_escape(content) + "</text>";
}

// The title lines of a figure ('\n' separates them), centred above it.
std::string title_lines(const std::string& title, double width) {
  std::string out;
  std::istringstream lines(title);
  double y = 16;
  for (std::string line; std::getline(lines, line); y += 15)
    out += text(width / 2, y, line, " text-anchor=\"middle\" class=\"t\"");
  return out;
}

// The width the longest title line needs in the 11px bold font of the page.
double title_width(const std::string& title) {
  std::size_t longest = 0;
  std::istringstream lines(title);
  for (std::string line; std::getline(lines, line);) longest = std::max(longest, line.size());
  return 6.8 * double(longest) + 20;
}

std::string open_svg(double width, double height, const std::string& label) {
  return "<svg width=\"" + px(width) + "\" height=\"" + px(height) +
         "\" viewBox=\"0 0 " + px(width) + " " + px(height) + "\" role=\"img\" aria-label=\"" + xml_escape(label) +
         "\"><rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>";
}

// --- a grid of heat maps ------------------------------------------------------

// The palette of report/plot.cpp, 0 '#ffffff', 0.5 '#6baed6', 1 '#08306b', at
// t = level / colour_levels.
constexpr int colour_levels = 64;

std::string colour(int level) {
  const double t = double(level) / colour_levels;
  static constexpr std::array<std::array<double, 3>, 3> stops{{{255, 255, 255}, {0x6b, 0xae, 0xd6}, {0x08, 0x30, 0x6b}}};
  const std::size_t k = t < 0.5 ? 0 : 1;
  const double u = t < 0.5 ? t * 2 : t * 2 - 1;
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", int(std::lround(stops[k][0] + u * (stops[k + 1][0] - stops[k][0]))),
                int(std::lround(stops[k][1] + u * (stops[k + 1][1] - stops[k][1]))),
                int(std::lround(stops[k][2] + u * (stops[k + 1][2] - stops[k][2]))));
  return buffer;
}

// The colour level of a value in the grid's range; -1 for NaN.
int level(double value, const std::array<double, 2>& range) {
  if (!std::isfinite(value)) return -1;
  return int(std::lround(std::clamp((value - range[0]) / (range[1] - range[0]), 0.0, 1.0) * colour_levels));
}

std::string draw(const FigureData& figure, const HeatMapGrid& grid) {
  const auto [rows, cols] = grid.layout;
  const std::size_t h = grid.panels.empty() ? 0 : grid.panels.front().values.shape(0),
                    w = grid.panels.empty() ? 0 : grid.panels.front().values.shape(1);
  const auto window = grid.window.value_or(std::array<int, 4>{0, int(h) - 1, 0, int(w) - 1});
  const int shown_rows = std::max(1, window[1] - window[0] + 1), shown_cols = std::max(1, window[3] - window[2] + 1);
  const double cell = std::floor(std::clamp(120.0 / std::max(shown_rows, shown_cols), 4.0, 24.0) * 10) / 10;  // px() exact
  const double panel_w = cell * shown_cols, panel_h = cell * shown_rows, gap = 10;
  const double head = 16.0 * double(std::count(figure.title.begin(), figure.title.end(), '\n') + 1) + 8;
  const double width = std::max({cols * (panel_w + gap) + gap, 300.0, title_width(figure.title)}), height = head + rows * (panel_h + 22) + gap;
  std::string svg = open_svg(width, height, figure.title) + title_lines(figure.title, width);
  for (std::size_t k = 0; k < grid.panels.size(); ++k) {
    const HeatMap& panel = grid.panels[k];
    const double x0 = gap + double(int(k) % cols) * (panel_w + gap), y0 = head + double(int(k) / cols) * (panel_h + 22) + 16;
    svg += text(x0 + panel_w / 2, y0 - 4, panel.title, " text-anchor=\"middle\"") + "<g transform=\"translate(" +
           px(x0) + " " + px(y0) + ") scale(" + px(cell) + ")\">";
    // one path per colour level, in cell units; white (level 0) is the background
    std::map<int, std::string> cells;
    for (int i = window[0]; i <= window[1]; ++i)
      for (int j = window[2]; j <= window[3]; ++j) {
        const bool inside = i >= 0 && j >= 0 && std::size_t(i) < panel.values.shape(0) && std::size_t(j) < panel.values.shape(1);
        const int l = level(inside ? panel.values(std::size_t(i), std::size_t(j)) : std::nan(""), grid.range);
        if (l != 0) cells[l] += "M" + std::to_string(j - window[2]) + " " + std::to_string(i - window[0]) + "h1v1h-1z";
      }
    for (const auto& [l, path] : cells) svg += "<path fill=\"" + (l < 0 ? std::string("#bbb") : colour(l)) + "\" d=\"" + path + "\"/>";
    svg += "</g><rect x=\"" + px(x0) + "\" y=\"" + px(y0) + "\" width=\"" + px(panel_w) + "\" height=\"" + px(panel_h) +
           "\" fill=\"none\" stroke=\"#999\"/>";
    if (grid.marker && (*grid.marker)[0] >= window[0] && (*grid.marker)[0] <= window[1] && (*grid.marker)[1] >= window[2] &&
        (*grid.marker)[1] <= window[3])
      svg += "<rect x=\"" + px(x0 + ((*grid.marker)[1] - window[2]) * cell) + "\" y=\"" +
             px(y0 + ((*grid.marker)[0] - window[0]) * cell) + "\" width=\"" + px(cell) + "\" height=\"" + px(cell) +
             "\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"1.5\"/>";
  }
  return svg + "</svg>";
}

// --- stacked bars ---------------------------------------------------------------

std::string draw(const FigureData& figure, const StackedBars& bars) {
  static constexpr std::array colours{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};
  const double head = 16.0 * double(std::count(figure.title.begin(), figure.title.end(), '\n') + 1) + 12;
  const double left = 80, plot_h = 240, bar_w = 60, slot = 120;
  const double width = std::max({left + slot * double(bars.categories.size()) + 20, 420.0, title_width(figure.title)});
  const double height = head + plot_h + 40 + 18 * double(bars.series.size());
  double total_max = 0;
  for (std::size_t i = 0; i < bars.categories.size(); ++i) {
    double total = 0;
    for (std::size_t s = 0; s < bars.series.size(); ++s) total += std::max(0.0, bars.values(i, s));
    total_max = std::max(total_max, total);
  }
  if (!(total_max > 0)) total_max = 1;
  const auto sy = [&](double v) { return head + plot_h - v / total_max * plot_h; };
  std::string svg = open_svg(width, height, figure.title) + title_lines(figure.title, width);
  for (int k = 0; k <= 4; ++k) {
    const double v = total_max * k / 4;
    svg += "<line x1=\"" + px(left) + "\" x2=\"" + px(width - 20) + "\" y1=\"" + px(sy(v)) + "\" y2=\"" + px(sy(v)) +
           "\" class=\"g\"/>" + text(left - 6, sy(v) + 4, short_number(v), " text-anchor=\"end\"");
  }
  svg += text(14, head + plot_h / 2, bars.y_label,
              " text-anchor=\"middle\" transform=\"rotate(-90 14 " + px(head + plot_h / 2) + ")\"");
  for (std::size_t i = 0; i < bars.categories.size(); ++i) {
    const double x = left + slot * double(i) + (slot - bar_w) / 2;
    double base = 0;
    for (std::size_t s = 0; s < bars.series.size(); ++s) {
      const double v = std::max(0.0, bars.values(i, s));
      svg += "<rect x=\"" + px(x) + "\" y=\"" + px(sy(base + v)) + "\" width=\"" + px(bar_w) + "\" height=\"" +
             px(sy(base) - sy(base + v)) + "\" fill=\"" + colours[s % colours.size()] + "\" stroke=\"#333\"><title>" +
             xml_escape(bars.categories[i] + ", " + bars.series[s] + ": " + short_number(bars.values(i, s))) +
             "</title></rect>";
      base += v;
    }
    svg += text(x + bar_w / 2, head + plot_h + 16, bars.categories[i], " text-anchor=\"middle\"");
  }
  for (std::size_t s = 0; s < bars.series.size(); ++s) {
    const double y = head + plot_h + 30 + 18 * double(s);
    svg += "<rect x=\"" + px(left) + "\" y=\"" + px(y) + "\" width=\"12\" height=\"12\" fill=\"" +
           colours[s % colours.size()] + "\"/>" + text(left + 18, y + 10, bars.series[s]);
  }
  return svg + "</svg>";
}

}  // namespace

// --- error against alpha (the gnuplot figure of report/plot.cpp) ---------------

std::string svg_alpha_sweep(const AlphaSweep& sweep) {
  constexpr double width = 600, height = 360, left = 70, right = 20, top = 48, bottom = 70;
  std::vector<std::array<double, 3>> points;  // alpha, log10 max_abs (NaN: none), log10 bound
  for (const auto* c : sweep.cases) {
    const double alpha = (*c)["sweep_point"]["alpha"].get<double>(), err = metric_value(*c, "max_abs"),
                 bound = metric_value(*c, "bound");
    points.push_back({alpha, err > 0 ? std::log10(err) : std::nan(""), bound > 0 ? std::log10(bound) : std::nan("")});
  }
  double x0 = points.front()[0], x1 = points.back()[0], y0 = INFINITY, y1 = -INFINITY;
  for (const auto& p : points)
    for (const double y : {p[1], p[2]})
      if (std::isfinite(y)) y0 = std::min(y0, y), y1 = std::max(y1, y);
  if (!std::isfinite(y0)) y0 = -16, y1 = 0;
  y0 = std::floor(y0), y1 = std::max(std::ceil(y1), y0 + 1);
  if (x1 <= x0) x1 = x0 + 1;
  const auto sx = [&](double x) { return left + (x - x0) / (x1 - x0) * (width - left - right); };
  const auto sy = [&](double y) { return top + (y1 - y) / (y1 - y0) * (height - top - bottom); };

  const nlohmann::json& fit = sweep.fit;
  const bool fitted = fit.is_object() && fit.value("slope", nlohmann::json()).is_number();
  std::string fit_title = "no fit: fewer than 2 points above round-off";
  if (fitted)
    fit_title = "fitted d ln(max_abs)/d alpha = " + short_number(fit["slope"].get<double>()) + " over the " +
                std::to_string(fit["used_values"].size()) + " points above round-off";
  const std::string title = sweep.group + ": |MHSA - conv| against alpha\n" + fit_title;
  std::string svg = open_svg(width, height, title) + title_lines(title, width);
  // axes, decades and alpha ticks
  const int step = int(std::ceil((y1 - y0) / 8));
  for (int d = int(y0); d <= int(y1); d += step)
    svg += "<line x1=\"" + px(left) + "\" x2=\"" + px(width - right) + "\" y1=\"" + px(sy(d)) + "\" y2=\"" + px(sy(d)) +
           "\" class=\"g\"/>" + text(left - 6, sy(d) + 4, "1e" + std::to_string(d), " text-anchor=\"end\"");
  for (int k = 0; k <= 5; ++k) {
    const double x = x0 + (x1 - x0) * k / 5;
    svg += "<line x1=\"" + px(sx(x)) + "\" x2=\"" + px(sx(x)) + "\" y1=\"" + px(top) + "\" y2=\"" +
           px(height - bottom) + "\" class=\"g\"/>" + text(sx(x), height - bottom + 15, short_number(x), " text-anchor=\"middle\"");
  }
  svg += "<rect x=\"" + px(left) + "\" y=\"" + px(top) + "\" width=\"" + px(width - left - right) + "\" height=\"" +
         px(height - top - bottom) + "\" fill=\"none\" stroke=\"#333\"/>" +
         text((left + width - right) / 2, height - bottom + 32, "alpha", " text-anchor=\"middle\"") +
         text(16, (top + height - bottom) / 2, "max |MHSA - conv|",
              " text-anchor=\"middle\" transform=\"rotate(-90 16 " + px((top + height - bottom) / 2) + ")\"");
  const auto polyline = [&](std::size_t column, const std::string& style) {
    std::string line, out;
    for (const auto& p : points)
      if (std::isfinite(p[column])) {
        line += px(sx(p[0])) + "," + px(sy(p[column])) + " ";
      } else if (!line.empty()) {  // a gap where there is no value, as gnuplot leaves one
        out += "<polyline points=\"" + line + "\" " + style + "/>";
        line.clear();
      }
    return line.empty() ? out : out + "<polyline points=\"" + line + "\" " + style + "/>";
  };
  svg += polyline(2, "fill=\"none\" stroke=\"#7f7f7f\" stroke-width=\"2\"");
  svg += polyline(1, "fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\"");
  for (std::size_t i = 0; i < points.size(); ++i)
    if (std::isfinite(points[i][1]))
      svg += "<circle cx=\"" + px(sx(points[i][0])) + "\" cy=\"" + px(sy(points[i][1])) +
             "\" r=\"3.5\" fill=\"#1f77b4\"><title>alpha = " + short_number(points[i][0]) +
             ": max_abs = " + short_number(std::pow(10.0, points[i][1])) + "</title></circle>";
  std::string legend = text(left + 30, height - 18, "max_abs (measured)") + text(left + 190, height - 18, "bound");
  svg += "<line x1=\"" + px(left) + "\" x2=\"" + px(left + 24) + "\" y1=\"" + px(height - 22) + "\" y2=\"" +
         px(height - 22) + "\" stroke=\"#1f77b4\" stroke-width=\"2\"/><line x1=\"" + px(left + 160) + "\" x2=\"" +
         px(left + 184) + "\" y1=\"" + px(height - 22) + "\" y2=\"" + px(height - 22) +
         "\" stroke=\"#7f7f7f\" stroke-width=\"2\"/>";
  if (fitted) {  // ln max_abs = intercept + slope * alpha, drawn in log10
    const double slope = fit["slope"].get<double>(), intercept = fit["intercept"].get<double>();
    const double a = fit["used_values"].front().get<double>(), b = fit["used_values"].back().get<double>();
    const auto y = [&](double x) { return (intercept + slope * x) / std::log(10.0); };
    svg += "<line x1=\"" + px(sx(a)) + "\" y1=\"" + px(sy(y(a))) + "\" x2=\"" + px(sx(b)) + "\" y2=\"" + px(sy(y(b))) +
           "\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/><line x1=\"" + px(left + 260) + "\" x2=\"" +
           px(left + 284) + "\" y1=\"" + px(height - 22) + "\" y2=\"" + px(height - 22) +
           "\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>";
    legend += text(left + 290, height - 18, "fit, slope " + short_number(slope));
  }
  return svg + legend + "</svg>";
}

std::string svg_figure(const FigureData& figure) {
  return std::visit([&](const auto& content) { return draw(figure, content); }, figure.content);
}

}  // namespace attnconv
