#pragma once
// Parses a case file's text strictly: malformed JSON is reported with its line
// and column, numbers that overflow a double (1e999) with where they are, and
// a key repeated in one object (which JSON parsers silently resolve) is
// refused. Messages name the file, the case and the key path.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace attnconv {

// Arrays and objects nested deeper than this are refused (no case file or
// report needs more than a handful of levels).
constexpr std::size_t max_json_depth = 64;

// Throws InputError.
nlohmann::json parse_case_json(const std::string& text, const std::string& path);

// Calls work(0), ..., work(count - 1), in any order, on any threads, and returns
// when all are done.
using ForEachBlock = std::function<void(std::size_t count, const std::function<void(std::size_t)>& work)>;

// Where parse_case_json splits a text: at the longest array under a key of the
// top-level object when it has more than min_items items, in blocks of
// block_items items.
struct JsonSplit {
  std::size_t min_items = 4096;
  std::size_t block_items = 1024;
};

// parse_case_json, with the long array of a top-level key (a report's cases)
// parsed in blocks of items through for_each (the caller's threads). The result
// and every message are parse_case_json's: whenever a block gives up, the whole
// text is parsed again by parse_case_json.
nlohmann::json parse_case_json(const std::string& text, const std::string& path, const ForEachBlock& for_each,
                               JsonSplit split = {});

}  // namespace attnconv
