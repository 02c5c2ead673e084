#include "run/resources.hpp"

#include "io/errors.hpp"
#include "io/sizes.hpp"
#include "proof/memory.hpp"

#include <algorithm>

namespace attnconv {

double case_memory_estimate(const Case& c) {
  const ProofDef* proof = find_proof(c.proof);
  double tokens = 1;
  if (c.params.contains("image")) {
    const auto image = get_int_pair(c.params, "image");
    tokens = double(image[0]) * double(image[1]);
  }
  const double one = proof && proof->memory_estimate ? proof->memory_estimate(c) : 64 * mebibyte + 8.0 * tokens * tokens;
  // A batch checked sample by sample (run/case_run.cpp run_verify) keeps every sample's outcome, at most
  // its tensors, then stacks them: twice the batch of them besides the sample running.
  if (c.batch == 0 || (proof && proof->whole_batch)) return one;
  return one + 2 * double(c.batch) * std::max(0.0, one - process_bytes);
}

void check_memory(const std::vector<Case>& cases, double max_bytes) {
  for (const auto& c : cases) {
    const double estimate = case_memory_estimate(c);
    if (!(estimate <= max_bytes))
      throw InputError(c.file + ": case '" + c.name + "': key 'params': these sizes need an estimated " +
                       format_bytes(estimate) + " of memory, more than --max-memory " + format_bytes(max_bytes) +
                       "; nothing was run");
  }
}

}  // namespace attnconv
