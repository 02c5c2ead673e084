// Every case of cases/, run through the program: each metric a case reports is
// declared by its proof, each declared non-optional metric is reported, and
// the tolerance applied names only declared error metrics.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_support.hpp"
#include "proof/proof.hpp"

using namespace attnconv;
using namespace attnconv::testing;

TEST_CASE("every metric of every case in cases/ is declared, every declared one reported", "[metrics_declared]") {
  ScratchDir dir("metrics_declared");
  const CliResult result =
      run_cli("run " + std::string(ATTNCONV_SOURCE_DIR) + "/cases --quiet --jobs 2 --out " + quoted(dir.path));
  INFO(result.output);
  REQUIRE(result.code == 0);
  const json report = json::parse(read_text(dir.path / "report.json"));
  std::set<std::string> proofs_seen;
  for (const auto& c : report["cases"]) {
    INFO(c["name"]);
    REQUIRE(c["status"] != "error");
    const ProofDef* proof = find_proof(c["proof"]);
    REQUIRE(proof);
    proofs_seen.insert(proof->id);
    std::set<std::string> declared, errors;
    for (const Metric& m : proof->metrics) {
      declared.insert(m.name);
      if (m.error) errors.insert(m.name);
      if (m.always) CHECK(c["metrics"].contains(m.name));
    }
    for (const auto& [name, value] : c["metrics"].items()) {
      INFO("metric " << name);
      CHECK(declared.count(name) == 1);
    }
    for (const auto& [name, limit] : c["tolerance"].items()) {
      INFO("tolerance " << name);
      CHECK(errors.count(name) == 1);
    }
  }
  for (const ProofDef* proof : all_proofs())  // every registered proof (not the test suite's own) has a case in cases/
    if (proof->id.rfind("test.", 0) != 0) CHECK(proofs_seen.count(proof->id) == 1);
}
