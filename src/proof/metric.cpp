#include "proof/metric.hpp"

#include <iterator>

#include "proof/vacuous.hpp"

namespace attnconv {

std::string to_string(MetricType type) {
  switch (type) {
    case MetricType::number: return "number";
    case MetricType::integer: return "integer";
    case MetricType::string: return "string";
    case MetricType::boolean: return "boolean";
    case MetricType::array: return "array";
    case MetricType::object: return "object";
  }
  return "?";
}

std::vector<Metric> distance_metrics(const std::string& what, std::vector<Metric> more) {
  Metric max_abs = metric::max_abs, rel_l2 = metric::rel_l2;
  max_abs.help += ", " + what;
  rel_l2.help += ", " + what;
  std::vector<Metric> metrics{max_abs, rel_l2};
  metrics.insert(metrics.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  metrics.insert(metrics.end(), {metric::reference_max_abs, metric::reference_rel_l2, metric::max_abs_per_sample,
                                 metric::worst_sample, metric::float64_verdict, metric::vacuous});
  return metrics;
}

json tolerance(std::initializer_list<MetricLimit> limits) {
  json out = json::object();
  for (const auto& [m, limit] : limits) out[m.get().name] = limit;
  return out;
}

}  // namespace attnconv
