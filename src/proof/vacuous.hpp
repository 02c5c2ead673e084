#pragma once
// A case whose two sides are trivially equal checks nothing: a layer whose
// input or values are all zero outputs its bias on both sides. Parameters that
// would make it so (a weight scale of 0) are refused when loading; a loaded
// tensor that is all zero sets the metric `vacuous` (the reason, in plain
// words), and a case reporting it has the verdict "error", never "holds"
// (proof/verdict.hpp; docs/design.md, "Verdicts").
#include <string>

#include "proof/metric.hpp"
#include "proof/proof.hpp"

namespace attnconv {
namespace metric {
inline const Metric vacuous{.name = "vacuous",
                            .type = MetricType::string,
                            .help = "when the case checks nothing: why (a loaded input or value weight all zero: "
                                    "both sides are the bias); the verdict is then \"error\"",
                            .always = false};
}  // namespace metric

template <class E> bool all_zero(const E& tensor) {
  for (const auto& v : tensor)
    if (v != 0) return false;
  return true;
}

// Sets the metric `vacuous`, unless already set, when `tensor` is all zero:
// "<what> is all zero: both sides are <both_sides>".
template <class E>
void vacuous_if_zero(Outcome& out, const std::string& what, const E& tensor, const std::string& both_sides) {
  if (!out.has(metric::vacuous) && all_zero(tensor))
    out.set(metric::vacuous, what + " is all zero: both sides are " + both_sides);
}

}  // namespace attnconv
