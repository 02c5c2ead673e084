#pragma once
// The parameters a proof accepts: name, kind, default, constraints. The case
// loader checks every case against them; proofs read them back with the typed
// accessors below.
#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ops/padding.hpp"

namespace attnconv {

using json = nlohmann::json;

enum class ParamKind {
  integer,   // a JSON integer
  number,    // a finite JSON number
  boolean,
  string,    // one of `choices` when given
  int_pair,  // n or [a, b]
  padding,   // n, [ph, pw], [top, bottom, left, right], "same" or "valid"
  number_pair,  // [a, b] of finite numbers
  int_pair_or_auto,  // "auto", n or [a, b]
  bool_pair,  // true, false or [a, b] of booleans
};

struct ParamSpec {
  std::string name = {};
  ParamKind kind = ParamKind::integer;
  json default_value = nullptr;  // null: required
  std::string help = {};
  std::optional<double> minimum = std::nullopt;  // inclusive (integer, number, int_pair)
  bool exclusive_minimum = false;                // minimum is exclusive (alpha > 0)
  std::vector<std::string> choices = {};         // string
  // Inclusive (integer, int_pair, padding). Without it: integer <= 2^31 - 1,
  // int_pair and padding <= 2^24, so that no size arithmetic can overflow.
  std::optional<double> maximum = std::nullopt;
};

inline constexpr double default_integer_maximum = 2147483647.0;
inline constexpr double default_size_maximum = 16777216.0;  // 2^24

std::string to_string(ParamKind kind);

// Empty when `value` fits `spec`, else what is wrong with it.
std::string check_param(const ParamSpec& spec, const json& value);

// Typed reads of a checked parameter object.
int get_int(const json& params, const std::string& key);
double get_number(const json& params, const std::string& key);
std::array<int, 2> get_int_pair(const json& params, const std::string& key);
std::array<double, 2> get_number_pair(const json& params, const std::string& key);

// The four sides of a "padding" parameter; "same" needs the kernel and dilation.
Padding resolve_padding(const json& padding, std::array<int, 2> kernel, std::array<int, 2> dilation);

// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(const std::string& a, const std::string& b);
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace attnconv
