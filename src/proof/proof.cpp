#include "proof/proof.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace attnconv {

namespace {
thread_local bool dumped_tensors = true;
}  // namespace

DumpedTensors::DumpedTensors(bool wanted) : previous_(dumped_tensors) { dumped_tensors = wanted; }
DumpedTensors::~DumpedTensors() { dumped_tensors = previous_; }
bool DumpedTensors::wanted() { return dumped_tensors; }

namespace {
std::map<std::string, ProofDef>& registry() {
  static std::map<std::string, ProofDef> proofs;  // constructed on first use: safe from static initialisers
  return proofs;
}
}  // namespace

std::string to_string(Expect expect) { return expect == Expect::hold ? "hold" : "fail"; }

std::optional<Expect> expect_from_string(const std::string& name) {
  if (name == "hold") return Expect::hold;
  if (name == "fail") return Expect::fail;
  return std::nullopt;
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

json without_retired(const ProofDef& proof, json params) {
  for (const auto& [name, value] : proof.retired)
    if (params.is_object() && params.contains(name) && params[name] == value) params.erase(name);
  return params;
}

void prepare_case(Case& c) {
  const ProofDef* proof = find_proof(c.proof);
  if (!proof) throw std::logic_error("no proof " + c.proof + " is registered");
  c.prepared = proof->prepare ? proof->prepare(c) : nullptr;
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
