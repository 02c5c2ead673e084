// Outside a dump a case keeps only the outputs it compares (DumpedTensors,
// proof/proof.hpp); with one, every tensor --dump-tensors writes; the metrics the same.
#include <catch2/catch.hpp>
#include <algorithm>

#include "cases/case_loader.hpp"
#include "proof/proof.hpp"

using namespace attnconv;

namespace {
std::vector<std::string> names(const Outcome& out) {
  std::vector<std::string> found;
  for (const NamedTensor& t : out.tensors) found.push_back(t.name);
  std::sort(found.begin(), found.end());
  return found;
}
}  // namespace

TEST_CASE("DumpedTensors(false): only expected and actual, the same metrics", "[proof]") {
  const std::string proof = GENERATE(as<std::string>{}, "cordonnier2020.theorem1", "acmix2022.conv_decomposition");
  const std::string params = proof == "cordonnier2020.theorem1"
                                 ? R"({"image": [6, 6], "kernel": 3, "in_channels": 2, "out_channels": 3, "heads": 9, "head_dim": 2, "padding": 1})"
                                 : R"({"image": [6, 6], "kernel": 3, "in_channels": 2, "out_channels": 3, "padding": 1})";
  const std::vector<Case> cases =
      load_case_text(R"({"cases": [{"name": "c", "proof": ")" + proof + R"(", "params": )" + params + "}]}", "c.json");
  const ProofDef& def = *find_proof(proof);
  const Outcome all = def.verify(cases[0]);
  Outcome kept;
  {
    const DumpedTensors dumped(false);
    kept = def.verify(cases[0]);
  }
  INFO(proof);
  CHECK(names(kept) == std::vector<std::string>{"actual", "expected"});
  CHECK(all.tensors.size() > kept.tensors.size());
  const std::vector<std::string> every = names(all);
  CHECK(std::count(every.begin(), every.end(), "conv_weight") == 1);
  CHECK(kept.metrics == all.metrics);
  CHECK(DumpedTensors::wanted());  // restored when the scope ends
}
