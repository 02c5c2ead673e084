#pragma once
// --filter PATTERN: the cases whose name is PATTERN, or matches it as a shell
// glob (fnmatch(3)). Sweep points are named `c1[alpha=8]`, and in a glob
// `[alpha=8]` is a set of characters: the literal name matches too.
#include <string>

namespace attnconv {

bool name_matches(const std::string& pattern, const std::string& name);

// Why a pattern may have matched nothing, for the message: how to write a
// literal '[' when it has one, else empty.
std::string no_match_hint(const std::string& pattern);

}  // namespace attnconv
