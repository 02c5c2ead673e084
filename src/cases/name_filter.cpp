#include "cases/name_filter.hpp"

#include <fnmatch.h>

#include "io/quote.hpp"

namespace attnconv {

bool name_matches(const std::string& pattern, const std::string& name) {
  return name == pattern || fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

std::string no_match_hint(const std::string& pattern) {
  if (pattern.find('[') == std::string::npos) return "";
  std::string escaped;
  for (const char ch : pattern) escaped += ch == '[' ? std::string("[[]") : std::string(1, ch);
  return "; in a glob [...] matches one character of a set: write '[[]' for a literal '[' (e.g. --filter '" +
         clip(escaped) + "'), or give the whole case name";
}

}  // namespace attnconv
