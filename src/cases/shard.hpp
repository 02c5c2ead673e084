#pragma once
// --shard I/N: a deterministic 1/N of the expanded cases, the same on every
// machine. Round-robin over the cases sorted by name: the k-th name (from 0)
// goes to shard k % N + 1, so shards differ in size by at most one case and
// the partition depends on nothing but the case names.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnconv {

using json = nlohmann::json;

struct Shard {
  int index = 1;  // 1-based, as in `sbatch --array=1-N`
  int count = 1;
};

// "I/N" with 1 <= I <= N; throws InputError otherwise.
Shard parse_shard(const std::string& text);

// Whether each of `names` (the expanded cases, loader order) is in `shard`.
std::vector<bool> in_shard(const std::vector<std::string>& names, Shard shard);

// FNV-1a 64 of the sorted case names joined by '\n', as 16 hex digits: shard
// reports of the same suite carry the same digest.
std::string case_list_digest(const std::vector<std::string>& names);

// What a shard report records so that `merge` can check completeness: the
// shard, and every expanded case name of the whole (unsharded) run, in order.
json shard_record(Shard shard, const std::vector<std::string>& all_names);

}  // namespace attnconv
