#include "cases/shard.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <cstdint>
#include <cstdio>
#include <map>

#include "io/errors.hpp"
#include "io/quote.hpp"

namespace attnconv {

Shard parse_shard(const std::string& text) {
  // Each number whole and within int: from_chars refuses spaces, '+' and
  // values out of range instead of wrapping them.
  Shard shard;
  const char* const end = text.data() + text.size();
  const auto slash = std::find(text.data(), end, '/');
  const auto index = std::from_chars(text.data(), slash, shard.index);
  const auto count = slash == end ? std::from_chars_result{end, std::errc::invalid_argument}
                                  : std::from_chars(slash + 1, end, shard.count);
  if (index.ec != std::errc() || index.ptr != slash || count.ec != std::errc() || count.ptr != end || shard.count < 1 || shard.index < 1 || shard.index > shard.count)
    throw InputError("--shard: expected I/N with 1 <= I <= N <= " + std::to_string(std::numeric_limits<int>::max()) +
                     " (e.g. 2/8), got '" + clip(text) + "'");
  return shard;
}

std::vector<bool> in_shard(const std::vector<std::string>& names, Shard shard) {
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  std::map<std::string, int> owner;
  for (std::size_t k = 0; k < sorted.size(); ++k) owner[sorted[k]] = int(k % std::size_t(shard.count)) + 1;
  std::vector<bool> kept;
  for (const auto& name : names) kept.push_back(owner.at(name) == shard.index);
  return kept;
}

std::string case_list_digest(const std::vector<std::string>& names) {
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a 64 offset basis
  const auto feed = [&](unsigned char byte) { hash = (hash ^ byte) * 1099511628211ull; };
  for (const auto& name : sorted) {
    for (const unsigned char ch : name) feed(ch);
    feed('\n');
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

json shard_record(Shard shard, const std::vector<std::string>& names) {
  return {{"index", shard.index},
          {"count", shard.count},
          {"total_cases", names.size()},
          {"cases_digest", case_list_digest(names)},
          {"all_cases", names}};
}

}  // namespace attnconv
