#include "report/plot.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <variant>

#include "io/errors.hpp"
#include "io/regular_file.hpp"
#include "report/report_figures.hpp"
#include "proof/short_number.hpp"

namespace attnconv {

namespace fs = std::filesystem;

namespace {

std::string slug(const std::string& name) {
  std::string out;
  for (const char ch : name) out += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.' ? ch : '_';
  return out;
}

// A gnuplot single-quoted string literal ('' stands for ').
std::string gp_quoted(const std::string& text) {
  std::string out = "'";
  for (const char ch : text) out += ch == '\'' ? std::string("''") : std::string(1, ch);
  return out + "'";
}

// A gnuplot double-quoted string literal, where a newline is a line break.
std::string dquoted(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch == '\n' ? std::string("\\n") : std::string(1, ch);
  }
  return out + "\"";
}

std::string number(double value) {
  if (!std::isfinite(value)) return "NaN";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

void run_gnuplot(const std::string& gnuplot, const std::string& terminal, const std::string& image,
                 const std::string& script) {
  const std::string setup = "set terminal " + terminal + "; set output " + gp_quoted(image);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("plot: cannot fork");
  if (pid == 0) {
    execlp(gnuplot.c_str(), gnuplot.c_str(), "-e", setup.c_str(), script.c_str(), static_cast<char*>(nullptr));
    std::fprintf(stderr, "attnconv plot: cannot run '%s' (install gnuplot: apt-get install gnuplot-nox)\n",
                 gnuplot.c_str());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("plot: gnuplot failed on " + script + " (exit status " +
                             std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
}

// Writes DIR/<name>.dat and DIR/<name>.gp and renders them as PNG and SVG.
struct Figure {
  std::string name, data, script;
  int width = 640, height = 400;
};

std::vector<std::string> render(const Figure& figure, const PlotOptions& options) {
  const fs::path base = fs::path(options.out_dir) / figure.name;
  const std::string data = base.string() + ".dat", script = base.string() + ".gp";
  write_regular_file(data, figure.data);
  write_regular_file(script, "datafile = " + gp_quoted(data) + "\n" + figure.script);
  const std::string size = " size " + std::to_string(figure.width) + "," + std::to_string(figure.height);
  run_gnuplot(options.gnuplot, "pngcairo noenhanced font 'sans,9'" + size, base.string() + ".png", script);
  run_gnuplot(options.gnuplot, "svg noenhanced font 'sans,9' background rgb 'white'" + size, base.string() + ".svg", script);
  return {base.string() + ".png", base.string() + ".svg"};
}

// --- error against alpha ------------------------------------------------------

Figure alpha_sweep_figure(const AlphaSweep& sweep) {
  const std::string& group = sweep.group;
  const nlohmann::json& fit = sweep.fit;
  Figure f;
  f.name = "alpha-sweep-" + slug(group);
  f.data = "# alpha max_abs bound\n";
  for (const auto* c : sweep.cases) {
    const double alpha = (*c)["sweep_point"]["alpha"].get<double>(), err = metric_value(*c, "max_abs");
    f.data += number(alpha) + " " + number(err > 0 ? err : std::nan("")) + " " + number(metric_value(*c, "bound")) + "\n";
  }
  // The report's fit (src/report/sweep_fit.hpp): over the points above round-off.
  std::string fit_title = "no fit: fewer than 2 points above round-off", fit_plot;
  if (fit.is_object() && fit.value("slope", nlohmann::json()).is_number()) {
    const double slope = fit["slope"].get<double>(), intercept = fit["intercept"].get<double>();
    const auto& used = fit["used_values"];
    fit_title = "fitted d ln(max_abs)/d alpha = " + short_number(slope) + " over the " + std::to_string(used.size()) +
                " points above round-off";
    fit_plot = ", [" + number(used.front().get<double>()) + ":" + number(used.back().get<double>()) + "] exp(" +
               number(intercept) + " + " + number(slope) + " * x) with lines dt 2 lw 2 lc rgb '#d62728' title " +
               gp_quoted("fit, slope " + short_number(slope));
  }
  f.script = "set title " + dquoted(group + ": |MHSA - conv| against alpha\n" + fit_title) +
             "\nset xlabel 'alpha'\nset ylabel 'max |MHSA - conv|'\nset logscale y\n"
             "set format y '%.0e'\nset grid\nset key top right\n"
             "plot datafile using 1:2 with linespoints pt 7 lw 2 lc rgb '#1f77b4' title 'max_abs (measured)', "
             "datafile using 1:3 with lines lw 2 lc rgb '#7f7f7f' title 'bound'" + fit_plot + "\n";
  return f;
}

// --- the figures a proof supplies (ProofDef::figures) ------------------------

// A grid of heat maps as gnuplot draws them: one data block per panel.
Figure draw(const FigureData& data, const HeatMapGrid& grid) {
  Figure f;
  f.name = slug(data.name);
  for (const HeatMap& panel : grid.panels) {
    f.data += "# " + panel.title + "\n";
    for (std::size_t i = 0; i < panel.values.shape(0); ++i) {
      for (std::size_t j = 0; j < panel.values.shape(1); ++j) f.data += (j ? " " : "") + number(panel.values(i, j));
      f.data += "\n";
    }
    f.data += "\n\n";
  }
  const auto [rows, cols] = grid.layout;
  f.width = std::clamp(cols * 160, 480, 1400);
  f.height = std::clamp(rows * 150 + 90, 300, 1400);
  const double top = 1.0 - 84.0 / f.height;
  std::ostringstream s;
  s << "set multiplot layout " << rows << "," << cols << " margins 0.02,0.98,0.02," << top
    << " spacing 0.02,0.07 title " << dquoted(data.title)
    << "\nset size ratio -1\nunset key\nunset xtics\nunset ytics\nset cbrange [" << number(grid.range[0]) << ":"
    << number(grid.range[1]) << "]\nunset colorbox\n"
    << "set palette defined (0 '#ffffff', 0.5 '#6baed6', 1 '#08306b')\n";
  if (grid.window)
    s << "set xrange [" << (*grid.window)[2] - 0.5 << ":" << (*grid.window)[3] + 0.5 << "]\n"
      << "set yrange [" << (*grid.window)[1] + 0.5 << ":" << (*grid.window)[0] - 0.5 << "]\n";
  if (grid.marker)
    s << "set object 1 rectangle center " << (*grid.marker)[1] << "," << (*grid.marker)[0]
      << " size 1,1 front fs empty border lc rgb '#d62728' lw 1.5\n";
  for (std::size_t k = 0; k < grid.panels.size(); ++k)
    s << "set title " << gp_quoted(grid.panels[k].title) << "\nplot datafile index " << k << " matrix with image\n";
  s << "unset multiplot\n";
  f.script = s.str();
  return f;
}

// A label as one whitespace-free column of a data file.
std::string column(std::string label) {
  for (char& ch : label) ch = std::isspace(static_cast<unsigned char>(ch)) || ch == '"' || ch == '\'' ? '_' : ch;
  return label;
}

// Stacked bars as a gnuplot row-stacked histogram: one row per category, one
// column per series.
Figure draw(const FigureData& data, const StackedBars& bars) {
  static constexpr std::array colours{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};
  Figure f;
  f.name = slug(data.name);
  f.data = "# category";
  for (const std::string& series : bars.series) f.data += " " + column(series);
  f.data += "\n";
  for (std::size_t i = 0; i < bars.categories.size(); ++i) {
    f.data += column(bars.categories[i]);
    for (std::size_t k = 0; k < bars.series.size(); ++k) f.data += " " + number(bars.values(i, k));
    f.data += "\n";
  }
  f.script = "set title " + dquoted(data.title) +
             "\nset style data histograms\nset style histogram rowstacked\nset style fill solid 0.85 border -1\n"
             "set boxwidth 0.6\nset ylabel " + gp_quoted(bars.y_label) +
             "\nset grid ytics\nset key below horizontal\nset yrange [0:*]\nplot ";
  for (std::size_t k = 0; k < bars.series.size(); ++k)
    f.script += (k ? ", '' using " + std::to_string(k + 2) : std::string("datafile using 2:xtic(1)")) + " lc rgb '" +
                colours[k % colours.size()] + "' title " + gp_quoted(bars.series[k]);
  f.script += "\n";
  f.width = std::clamp(int(bars.categories.size()) * 140 + 200, 480, 1200);
  return f;
}

}  // namespace

std::vector<std::string> plot_report(const nlohmann::json& report, const PlotOptions& options) {
  check_report_cases(report, "plot");
  std::vector<Figure> figures;
  for (const AlphaSweep& sweep : alpha_sweeps(report, options.filter)) figures.push_back(alpha_sweep_figure(sweep));
  std::ostringstream notes;
  for (const CaseFigures& c : proof_figures(report, notes, options.filter))
    for (const FigureData& data : c.figures)
      figures.push_back(std::visit([&](const auto& content) { return draw(data, content); }, data.content));
  // Before any figure is drawn: each file it makes is absent or a regular file (not a link, FIFO or device).
  for (const Figure& f : figures)
    for (const char* extension : {".dat", ".gp", ".png", ".svg"}) {
      const std::string file = (fs::path(options.out_dir) / (f.name + extension)).string();
      if (const std::string why = not_a_regular_file(file); !why.empty())
        throw InputError("--out " + options.out_dir + ": " + file + " " + why + "; a figure is written only as a regular file");
    }
  fs::create_directories(options.out_dir);
  std::vector<std::string> written;
  for (const Figure& f : figures)
    for (auto& image : render(f, options)) written.push_back(std::move(image));
  std::istringstream lines(notes.str());
  for (std::string line; std::getline(lines, line);) std::cerr << "attnconv plot: " << line << "\n";
  return written;
}

}  // namespace attnconv
