#pragma once
// Values and keys quoted in error messages: at most `limit` characters, so
// that a message stays readable (and cheap) whatever the input holds.
#include <nlohmann/json.hpp>
#include <string>

namespace attnconv {

// Characters a message quotes of one value or key path.
constexpr std::size_t quote_limit = 200;

// `value` as compact JSON (as json::dump() writes it), cut after `limit`
// characters with "...". Walks no deeper into nested arrays and objects than
// the characters it writes, so a value nested 100 000 levels deep is safe.
std::string quote(const nlohmann::json& value, std::size_t limit = quote_limit);

// `text` cut after `limit` bytes (at a character boundary) with "...",
// control characters written as \u0000 ... \u001f, \u007f ... \u009f and bytes that are
// not UTF-8 as \xFF: the result is valid UTF-8 a terminal shows as written.
std::string clip(std::string text, std::size_t limit = quote_limit);

}  // namespace attnconv
