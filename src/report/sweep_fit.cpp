#include "report/sweep_fit.hpp"

#include <cmath>
#include <map>
#include <utility>
#include <vector>

namespace attnconv {

namespace {

const char* const selection_note =
    "least squares of ln(max_abs) against the swept key, over the points above round-off "
    "(max_abs > roundoff_allowance, when the proof reports one, and max_abs > 0)";

}  // namespace

std::string alpha_sweep_group(const json& c) {
  const json point = c.value("sweep_point", json::object());
  if (!point.is_object() || !point.contains("alpha") || !point["alpha"].is_number()) return "";
  std::string label = c.value("sweep_group", std::string());
  for (const auto& [other, other_value] : point.items())
    if (other != "alpha") label += "[" + other + "=" + (other_value.is_string() ? other_value.get<std::string>() : other_value.dump()) + "]";
  return label;
}

json fit_sweeps(const json& cases) {
  // (group label, swept key) -> points (x, max_abs, roundoff or NaN); insertion order kept by `order`.
  std::map<std::pair<std::string, std::string>, std::vector<json>> groups;
  std::vector<std::pair<std::string, std::string>> order;
  for (const auto& c : cases) {
    const std::string label = alpha_sweep_group(c);
    if (label.empty()) continue;
    const auto id = std::make_pair(label, std::string("alpha"));
    if (!groups.count(id)) order.push_back(id);
    groups[id].push_back(c);
  }
  json fits = json::array();
  for (const auto& id : order) {
    const auto& members = groups[id];
    if (members.size() < 2) continue;
    std::vector<std::pair<double, double>> used;  // (x, ln max_abs)
    for (const auto& c : members) {
      if (!c.contains("metrics") || !c["metrics"].contains("max_abs") || !c["metrics"]["max_abs"].is_number()) continue;
      const double error = c["metrics"]["max_abs"].get<double>();
      const json& roundoff = c["metrics"].value("roundoff_allowance", json());
      if (!(error > 0) || !std::isfinite(error)) continue;
      if (roundoff.is_number() && !(error > roundoff.get<double>())) continue;
      used.emplace_back(c["sweep_point"][id.second].get<double>(), std::log(error));
    }
    json fit = {{"group", id.first},
                {"swept_key", id.second},
                {"metric", "max_abs"},
                {"points_total", members.size()},
                {"points_used", used.size()},
                {"slope", nullptr},
                {"intercept", nullptr},
                {"note", selection_note}};
    json xs = json::array();
    for (const auto& [x, y] : used) xs.push_back(x);
    fit["used_values"] = xs;
    if (used.size() >= 2) {
      double mx = 0, my = 0;
      for (const auto& [x, y] : used) mx += x, my += y;
      mx /= double(used.size()), my /= double(used.size());
      double sxx = 0, sxy = 0;
      for (const auto& [x, y] : used) sxx += (x - mx) * (x - mx), sxy += (x - mx) * (y - my);
      if (sxx > 0) {
        fit["slope"] = sxy / sxx;
        fit["intercept"] = my - sxy / sxx * mx;
      }
    }
    fits.push_back(std::move(fit));
  }
  return fits;
}

}  // namespace attnconv
