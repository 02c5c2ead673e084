#include "proof/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "proof/short_number.hpp"
#include "proof/vacuous.hpp"

namespace attnconv {

std::string to_string(Status status) {
  switch (status) {
    case Status::pass: return "pass";
    case Status::fail: return "fail";
    case Status::error: return "error";
  }
  return "?";
}

std::string to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::holds: return "holds";
    case Verdict::bound_holds: return "bound holds";
    case Verdict::fails: return "fails";
    case Verdict::fails_as_predicted: return "fails as predicted";
    case Verdict::error: return "error";
  }
  return "?";
}

std::optional<Status> status_from_string(const std::string& name) {
  for (const Status s : {Status::pass, Status::fail, Status::error})
    if (to_string(s) == name) return s;
  return std::nullopt;
}

std::optional<Verdict> verdict_from_string(const std::string& name) {
  for (const Verdict v : all_verdicts)
    if (to_string(v) == name) return v;
  return std::nullopt;
}

namespace {
// A report entry's string member, not copied (nullptr when absent or not a string).
const std::string* string_member(const json& entry, const char* key) {
  if (!entry.is_object()) return nullptr;
  const auto it = entry.find(key);
  return it != entry.end() && it->is_string() ? &it->get_ref<const std::string&>() : nullptr;
}
}  // namespace

std::optional<Status> entry_status(const json& entry) {
  const std::string* s = string_member(entry, "status");
  return s ? status_from_string(*s) : std::nullopt;
}

std::optional<Verdict> entry_verdict(const json& entry) {
  const std::string* v = string_member(entry, "verdict");
  return v ? verdict_from_string(*v) : std::nullopt;
}

json dtype_tolerance(const std::string& dtype) {
  return dtype == "float32" ? json{{"rel_l2", 1e-4}} : json{{"rel_l2", 1e-10}};
}

namespace {

// short_number, but NaN without the sign printf may give it.
std::string number_words(double value) { return std::isnan(value) ? "nan" : short_number(value); }

std::string multi_index(std::size_t flat, const std::vector<std::size_t>& shape) {
  std::vector<std::size_t> index(shape.size());
  for (std::size_t k = shape.size(); k-- > 0;) index[k] = flat % shape[k], flat /= shape[k];
  std::string text = "[";
  for (std::size_t k = 0; k < index.size(); ++k) text += (k ? ", " : "") + std::to_string(index[k]);
  return text + "]";
}

template <class A> std::string non_finite_in(const std::string& name, const A& a) {
  const auto it = std::find_if(a.begin(), a.end(), [](auto value) { return !std::isfinite(value); });
  if (it == a.end()) return "";
  const std::vector<std::size_t> shape(a.shape().begin(), a.shape().end());
  return "tensor '" + name + "' has " + number_words(double(*it)) + " at " +
         multi_index(std::size_t(std::distance(a.begin(), it)), shape);
}

bool finite_number(const json& value) { return value.is_number() && std::isfinite(value.get<double>()); }

// The metrics a tolerance names, each against its limit.
struct Comparison {
  std::string within, exceeded;  // "max_abs = 3.1e-15 <= 1e-10, ..."
  bool holds() const { return exceeded.empty(); }
};

Comparison compare_to(const json& tolerance, const json& metrics, const std::string& proof) {
  Comparison out;
  for (const auto& [metric, limit] : tolerance.items()) {
    if (!metrics.contains(metric) || !metrics[metric].is_number())
      throw std::runtime_error("the tolerance names metric '" + metric + "', which proof " + proof +
                               " does not report for this case");
    const double value = metrics[metric].get<double>();
    const std::string line = metric + " = " + short_number(value);
    if (value <= limit.get<double>())
      out.within += (out.within.empty() ? "" : ", ") + line + " <= " + short_number(limit.get<double>());
    else
      out.exceeded += (out.exceeded.empty() ? "" : ", ") + line + " > " + short_number(limit.get<double>());
  }
  return out;
}

std::string distance_to_reference(const json& metrics) {
  std::string text;
  for (const char* name : {"max_abs", "rel_l2"})
    if (metrics.contains(name) && metrics[name].is_number())
      text += std::string(text.empty() ? "" : ", ") + name + " = " + number_words(metrics[name].get<double>());
  return text.empty() ? "" : "; distance to the reference: " + text;
}

// Empty when the predicted failure is measured; else why not.
std::string unconfirmed_failure(const Outcome& outcome, const std::string& proof) {
  if (!outcome.predicted_failure) return "proof " + proof + " predicts no failure for this case to confirm";
  const PredictedFailure& p = *outcome.predicted_failure;
  const json& value = outcome.metrics.value(p.metric, json());
  if (!finite_number(value)) return p.metric + " is not reported as a finite number";
  const double measured = value.get<double>();
  if (measured <= 0) return p.metric + " = " + short_number(measured) + " is not a positive failure";
  if (measured < p.floor - p.roundoff)
    return p.metric + " = " + short_number(measured) + " is below the predicted floor " + short_number(p.floor) +
           " (" + p.reason + ")";
  return "";
}

std::string predicted_failure_words(const Outcome& outcome) {
  const PredictedFailure& p = *outcome.predicted_failure;
  return p.metric + " = " + short_number(outcome.metrics[p.metric].get<double>()) + " >= the predicted floor " +
         short_number(p.floor) + " (" + p.reason + ")";
}

std::string where_approached(const Case& c) {
  return c.params.contains("alpha") && c.params["alpha"].is_number()
             ? "at alpha = " + short_number(c.params["alpha"].get<double>())
             : "at these parameters";
}

// The first non-finite value among the outcome's tensors (with its row-major
// multi-index), then its error metrics, then the limits, in plain words
// ("tensor 'actual' has nan at [0, 2, 3]"); empty when all are finite.
std::string first_non_finite(const Outcome& outcome, const std::vector<std::string>& error_metrics,
                             const std::vector<const json*>& limits) {
  for (const NamedTensor& t : outcome.tensors) {
    const std::string found = std::visit([&](const auto& a) { return non_finite_in(t.name, a); }, t.data);
    if (!found.empty()) return found;
  }
  const auto words = [](const json& value) { return value.is_number() ? number_words(value.get<double>()) : value.dump(); };
  for (const std::string& name : error_metrics)
    if (outcome.metrics.contains(name) && !finite_number(outcome.metrics[name]))
      return "error metric " + name + " is " + words(outcome.metrics[name]);
  for (const json* tolerance : limits)
    for (const auto& [name, limit] : tolerance->items())
      if (!finite_number(limit)) return "the tolerance on " + name + " is " + words(limit);
  return "";
}

}  // namespace

Judgement judge(const Case& c, const Outcome& outcome) {
  const ProofDef* proof = find_proof(c.proof);
  Judgement v;
  const Request& request = c.request;
  // The comparison with an outside implementation's output (reference_*) is
  // judged apart from the claim: it checks that the case describes the layer.
  json claim_tolerance = json::object(), reference_tolerance = json::object();
  for (const auto& [name, limit] : request.tolerance.items())
    (name.rfind("reference_", 0) == 0 ? reference_tolerance : claim_tolerance)[name] = limit;
  if (reference_tolerance.empty() && outcome.metrics.contains("reference_rel_l2"))
    reference_tolerance["reference_rel_l2"] = dtype_tolerance(c.params.value("dtype", "float64"))["rel_l2"];
  const bool given = !claim_tolerance.empty();
  v.tolerance = given                                ? claim_tolerance
                : !outcome.default_tolerance.empty() ? outcome.default_tolerance
                                                     : dtype_tolerance(c.params.value("dtype", "float64"));
  const std::string tail = distance_to_reference(outcome.metrics) + (outcome.message.empty() ? "" : ". " + outcome.message);
  const std::string non_finite = first_non_finite(outcome, proof ? error_metric_names(*proof) : std::vector<std::string>{},
                                                  {&v.tolerance, &outcome.roundoff_tolerance, &reference_tolerance});
  if (!non_finite.empty()) {
    v.status = Status::error;
    v.verdict = Verdict::error;
    v.tolerance.update(reference_tolerance);
    v.message = "error: " + non_finite + ": a non-finite result neither holds nor fails" + tail;
    return v;
  }
  if (const json& vacuous = outcome.metrics.value(metric::vacuous.name, json()); vacuous.is_string()) {
    v.status = Status::error;
    v.verdict = Verdict::error;
    v.tolerance.update(reference_tolerance);
    v.message = "error: " + vacuous.get<std::string>() + "; nothing is checked" + tail;
    return v;
  }
  if (!reference_tolerance.empty()) {
    const Comparison reference = compare_to(reference_tolerance, outcome.metrics, c.proof);
    v.tolerance.update(reference_tolerance);
    if (!reference.holds()) {
      v.status = Status::fail;
      v.verdict = Verdict::fails;
      v.message = "fails: the proof's reference disagrees with the case's reference_output (" + reference.exceeded +
                  "): the parameters do not describe the layer that produced it" + tail;
      return v;
    }
  }

  const Comparison against = compare_to(v.tolerance, outcome.metrics, c.proof);
  if (!against.holds()) {
    const bool converse = request.expect == Expect::fail;
    const std::string gap = converse ? unconfirmed_failure(outcome, c.proof) : "";
    const bool as_predicted = converse && gap.empty();
    v.status = as_predicted ? Status::pass : Status::fail;
    v.verdict = as_predicted ? Verdict::fails_as_predicted : Verdict::fails;
    v.message = as_predicted ? "fails as predicted: the claim of " + c.proof + " does not hold for these parameters (" +
                                   against.exceeded + "), and " + predicted_failure_words(outcome)
                             : "fails: the claim of " + c.proof + " does not hold (" + against.exceeded + ")";
    if (converse && !as_predicted) v.message += "; the case expects a predicted failure, but " + gap;
    v.message += tail;
    return v;
  }

  const Comparison roundoff = given || outcome.roundoff_tolerance.empty()
                                  ? against
                                  : compare_to(outcome.roundoff_tolerance, outcome.metrics, c.proof);
  v.verdict = roundoff.holds() ? Verdict::holds : Verdict::bound_holds;
  v.status = request.expect == Expect::hold ? Status::pass : Status::fail;
  if (given)
    v.message = "holds: the claim of " + c.proof + " holds within the case's tolerance (" + against.within + ")";
  else if (roundoff.holds())
    v.message = "holds: the claim of " + c.proof + " holds to round-off (" + roundoff.within + ")";
  else
    v.message = "bound holds: the bound of " + c.proof + " holds (" + against.within +
                ") but the error is above round-off (" + roundoff.exceeded + "): the claim is approached, not reached, " +
                where_approached(c);
  if (request.expect == Expect::fail) v.message += "; the case expects the claim to fail";
  v.message += tail;
  return v;
}

}  // namespace attnconv
