#pragma once
// load_cases within --max-memory, keeping the cases of --filter and --shard
// (cases/case_loader.hpp).
#include <optional>
#include <string>
#include <vector>

#include "cases/shard.hpp"
#include "proof/proof.hpp"

namespace attnconv {

// The expanded cases a run keeps, chosen by name alone: those --filter
// matches (empty: every case), then --shard's share of those.
struct CaseSelection {
  std::string filter;
  std::optional<Shard> shard;
};

struct SelectedCases {
  std::vector<Case> cases;            // the kept cases, their tensors checked, in loader order
  std::vector<std::string> matched;   // every expanded case name the filter keeps (a shard's all_cases)
};

// load_cases, keeping `selection`. Every case object is checked as
// load_cases checks it (keys, parameters, sweeps, unique names, the entries
// an .npz form names), but only the kept cases' tensors are read and checked:
// a case --filter or --shard leaves out reads none of its files' data.
// `max_memory` (bytes; 0: default_max_memory()) bounds what the .npz entries
// of one case take to read while its tensors are checked: an entry or a case
// over it is refused (exit 2) before it is read.
SelectedCases load_selected_cases(const std::vector<std::string>& paths, double max_memory,
                                  const CaseSelection& selection);

}  // namespace attnconv
