#include "run/resources.hpp"

#include "io/errors.hpp"
#include "io/sizes.hpp"

namespace attnconv {

double case_memory_estimate(const Case& c) {
  const ProofDef* proof = find_proof(c.proof);
  if (proof && proof->memory_estimate) return proof->memory_estimate(c);
  double tokens = 1;
  if (c.params.contains("image")) {
    const auto image = get_int_pair(c.params, "image");
    tokens = double(image[0]) * double(image[1]);
  }
  return 64.0 * 1024 * 1024 + 8.0 * tokens * tokens;
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
