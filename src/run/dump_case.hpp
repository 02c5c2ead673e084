#pragma once
// DIR/<case>/case.json beside a case's --dump-tensors files (docs/tensor_dumps.md):
// what a reader needs, with the README and numpy, to recompute its `expected`
// and `actual` from the folder alone.
#include <string>
#include <vector>

#include "proof/proof.hpp"

namespace attnconv {

// The document: the report's entry for the case (name, proof, file,
// sweep_group and sweep_point: where its file gives it; params with every default filled in, expect,
// tolerance, status, verdict, metrics, message, provenance), the tool, and per
// dumped tensor its file, dtype, shape, meaning (the proof's .dumps) and source
// (the loader's provenance for a loaded or seed-drawn tensor, else "computed").
json dump_case_document(const Case& c, const json& entry, const std::vector<NamedTensor>& tensors);

// Writes it to dir/case.json atomically (run/atomic_file.hpp).
void write_dump_case(const std::string& dir, const Case& c, const json& entry, const std::vector<NamedTensor>& tensors);

}  // namespace attnconv
