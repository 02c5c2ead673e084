#include "harness/verdict.hpp"

#include <stdexcept>

#include "harness/short_number.hpp"

namespace attnconv {

json dtype_tolerance(const std::string& dtype) {
  return dtype == "float32" ? json{{"rel_l2", 1e-4}} : json{{"rel_l2", 1e-10}};
}

Verdict judge(const Case& c, const Outcome& outcome) {
  Verdict verdict;
  verdict.tolerance = !c.tolerance.empty()                ? c.tolerance
                      : !outcome.default_tolerance.empty() ? outcome.default_tolerance
                                                            : dtype_tolerance(c.params.value("dtype", "float64"));
  std::string exceeded, within;
  for (const auto& [metric, limit] : verdict.tolerance.items()) {
    if (!outcome.metrics.contains(metric) || !outcome.metrics[metric].is_number())
      throw std::runtime_error("the tolerance names metric '" + metric + "', which proof " + c.proof +
                               " does not report");
    const double value = outcome.metrics[metric].get<double>();
    const std::string line = metric + " = " + short_number(value);
    if (value <= limit.get<double>())  // false for NaN: a NaN never holds
      within += (within.empty() ? "" : ", ") + line + " <= " + short_number(limit.get<double>());
    else
      exceeded += (exceeded.empty() ? "" : ", ") + line + " > " + short_number(limit.get<double>());
  }
  const bool holds = exceeded.empty();
  const bool expected = (c.expect == "hold") == holds;
  verdict.status = expected ? "pass" : "fail";
  if (holds)
    verdict.message = expected ? "the claim holds: " + within
                               : "expected the claim to fail, but it holds: " + within;
  else
    verdict.message = expected ? "the claim fails as predicted: " + exceeded : "the claim fails: " + exceeded;
  if (!outcome.message.empty()) verdict.message += ". " + outcome.message;
  return verdict;
}

}  // namespace attnconv
