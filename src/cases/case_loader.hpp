#pragma once
// Reads case files (docs/design.md, "Case files"), checks every case against its
// proof's parameters, fills in defaults and expands sweeps. Any problem throws
// InputError naming the file, the case and the key, before anything runs.
#include <string>
#include <vector>

#include "proof/proof.hpp"

namespace attnconv {

// Cases of one file, expanded.
std::vector<Case> load_case_file(const std::string& path);

// Cases of the text of a case file; `path` names it in messages and anchors
// relative .npy paths (exposed for tests and the fuzzer).
std::vector<Case> load_case_text(const std::string& text, const std::string& path);

// Cases of files and folders (every *.json below a folder except schema.json,
// in sorted order), expanded; case names must be unique across all of them.
std::vector<Case> load_cases(const std::vector<std::string>& paths);

// One case object of a file, expanded (exposed for tests and the fuzzer).
std::vector<Case> expand_case(const json& object, const std::string& file, std::size_t index);

}  // namespace attnconv
