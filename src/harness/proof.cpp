#include "harness/proof.hpp"

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
