#include "proof/proof.hpp"

#include <iterator>

#include <algorithm>
#include <map>
#include <stdexcept>

namespace attnconv {

namespace {
std::map<std::string, ProofDef>& registry() {
  static std::map<std::string, ProofDef> proofs;  // constructed on first use: safe from static initialisers
  return proofs;
}
}  // namespace

std::vector<MetricSpec> distance_metrics(const std::string& what, std::vector<MetricSpec> more) {
  std::vector<MetricSpec> metrics = {
      {.name = "max_abs", .type = "number", .help = "max |a - b| over the output, " + what, .error = true},
      {.name = "rel_l2", .type = "number", .help = "||a - b||_2 / ||b||_2, " + what, .error = true}};
  metrics.insert(metrics.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  // What the harness adds to any proof's metrics (run/case_run.hpp).
  metrics.insert(metrics.end(), {
      {.name = "reference_max_abs", .type = "number",
       .help = "with a reference_output: max |the proof's reference - reference_output| (an outside implementation's "
               "output for the same input)",
       .always = false, .error = true},
      {.name = "reference_rel_l2", .type = "number",
       .help = "with a reference_output: rel_l2 of the proof's reference against reference_output", .always = false,
       .error = true},
      {.name = "max_abs_per_sample", .type = "array",
       .help = "a batch input: max_abs of each sample (the other metrics are the worst sample's)", .always = false},
      {.name = "worst_sample", .type = "integer", .help = "a batch input: the sample the other metrics are of",
       .always = false},
  });
  return metrics;
}

std::vector<std::string> error_metric_names(const ProofDef& proof) {
  std::vector<std::string> names;
  for (const auto& metric : proof.metrics)
    if (metric.error) names.push_back(metric.name);
  return names;
}

bool register_proof(ProofDef proof) {
  const std::string id = proof.id;
  if (!registry().emplace(id, std::move(proof)).second) throw std::logic_error("proof registered twice: " + id);
  return true;
}

const ProofDef* find_proof(const std::string& id) {
  const auto it = registry().find(id);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<const ProofDef*> all_proofs() {
  std::vector<const ProofDef*> out;
  for (const auto& [id, proof] : registry()) out.push_back(&proof);
  return out;
}

}  // namespace attnconv
