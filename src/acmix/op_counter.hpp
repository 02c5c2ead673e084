#pragma once
// Multiply-adds actually performed, by the functions that perform them. Every
// Stage I / Stage II function of src/acmix/ adds what its loops execute to the
// counter it is given, under a label ("stage1.projection", "stage2.shift_sum",
// ...); the cost table reads these counts, not formulas. A lone addition (the
// shift-and-sum of Stage II) counts as one operation, as in the ACmix paper.
#include <cstdint>
#include <map>
#include <string>

namespace attnconv {

struct OpCounter {
  std::map<std::string, std::int64_t> multiply_adds;

  void add(const std::string& label, std::int64_t count) { multiply_adds[label] += count; }
  // Sum over the labels that start with `prefix` ("stage1", "stage2", "" for all).
  std::int64_t total(const std::string& prefix = "") const {
    std::int64_t sum = 0;
    for (const auto& [label, count] : multiply_adds)
      if (label.compare(0, prefix.size(), prefix) == 0) sum += count;
    return sum;
  }
};

}  // namespace attnconv
