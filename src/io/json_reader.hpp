#pragma once
// Parses a case file's text strictly: malformed JSON is reported with its line
// and column, numbers that overflow a double (1e999) with where they are, and
// a key repeated in one object (which JSON parsers silently resolve) is
// refused. Messages name the file, the case and the key path.
#include <nlohmann/json.hpp>
#include <string>

namespace attnconv {

// Arrays and objects nested deeper than this are refused (no case file or
// report needs more than a handful of levels).
constexpr std::size_t max_json_depth = 64;

// Throws InputError.
nlohmann::json parse_case_json(const std::string& text, const std::string& path);

}  // namespace attnconv
