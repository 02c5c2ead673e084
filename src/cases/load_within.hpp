#pragma once
// load_cases within --max-memory (cases/case_loader.hpp).
#include <string>
#include <vector>

#include "proof/proof.hpp"

namespace attnconv {

// load_cases, with `max_memory` (bytes; 0: default_max_memory()) bounding
// what the .npz entries of one case take to read while its weights are
// checked: an entry or a case over it is refused (exit 2) before it is read.
std::vector<Case> load_cases_within(const std::vector<std::string>& paths, double max_memory);

}  // namespace attnconv
