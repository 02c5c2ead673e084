#pragma once
// The proof registry as documents, generated so they cannot drift from the
// proofs: `attnconv proofs` (plain words), `attnconv proofs --json` (for tools:
// every proof's id, paper, statement, parameters, metrics and dumped tensors)
// and `attnconv proofs --dumps-table` (docs/tensor_dumps.md).
#include <nlohmann/json.hpp>
#include <string>

namespace attnconv {

std::string proofs_text();
nlohmann::json proofs_json();
std::string dumps_table_markdown();

}  // namespace attnconv
