#include "proof/params.hpp"

#include <algorithm>
#include <cmath>

#include "io/quote.hpp"

namespace attnconv {

std::string to_string(ParamKind kind) {
  switch (kind) {
    case ParamKind::integer: return "an integer";
    case ParamKind::number: return "a number";
    case ParamKind::boolean: return "true or false";
    case ParamKind::string: return "a string";
    case ParamKind::int_pair: return "an integer or a pair of integers";
    case ParamKind::padding: return "an integer, [ph, pw], [top, bottom, left, right], \"same\" or \"valid\"";
    case ParamKind::number_pair: return "a pair of numbers [a, b]";
    case ParamKind::int_pair_or_auto: return "\"auto\", an integer or a pair of integers";
    case ParamKind::bool_pair: return "true, false or a pair of them";
  }
  return "?";
}

namespace {

std::string bound_string(double bound) {
  json b = bound;
  if (std::floor(bound) == bound && std::abs(bound) < 9e15) b = static_cast<long long>(bound);
  return b.dump();
}

double maximum_of(const ParamSpec& spec) {
  if (spec.maximum) return *spec.maximum;
  return spec.kind == ParamKind::integer ? default_integer_maximum : default_size_maximum;
}

std::string check_bounds(const ParamSpec& spec, double value) {
  if (spec.kind != ParamKind::number && value > maximum_of(spec))
    return "must be <= " + bound_string(maximum_of(spec)) + ", got " + bound_string(value);
  if (spec.kind == ParamKind::number && spec.maximum && value > *spec.maximum)
    return "must be <= " + bound_string(*spec.maximum) + ", got " + bound_string(value);
  if (!spec.minimum) return "";
  const bool ok = spec.exclusive_minimum ? value > *spec.minimum : value >= *spec.minimum;
  if (ok) return "";
  return "must be " + std::string(spec.exclusive_minimum ? "> " : ">= ") + bound_string(*spec.minimum) + ", got " +
         bound_string(value);
}

bool all_integers(const json& value, std::size_t size) {
  return value.is_array() && value.size() == size &&
         std::all_of(value.begin(), value.end(), [](const json& v) { return v.is_number_integer(); });
}

}  // namespace

std::string check_param(const ParamSpec& spec, const json& value) {
  const std::string expected = "must be " + to_string(spec.kind) + ", got " + quote(value);
  switch (spec.kind) {
    case ParamKind::integer:
      if (!value.is_number_integer()) return expected;
      return check_bounds(spec, value.get<double>());
    case ParamKind::number:
      if (!value.is_number() || !std::isfinite(value.get<double>())) return "must be a finite number, got " + quote(value);
      return check_bounds(spec, value.get<double>());
    case ParamKind::boolean:
      return value.is_boolean() ? "" : expected;
    case ParamKind::bool_pair:
      return value.is_boolean() || (value.is_array() && value.size() == 2 && value[0].is_boolean() &&
                                    value[1].is_boolean())
                 ? ""
                 : expected;
    case ParamKind::string:
      if (!value.is_string()) return expected;
      if (!spec.choices.empty() &&
          std::find(spec.choices.begin(), spec.choices.end(), value.get<std::string>()) == spec.choices.end()) {
        std::string list;
        for (const auto& c : spec.choices) list += (list.empty() ? "" : ", ") + json(c).dump();
        return "must be one of " + list + ", got " + quote(value);
      }
      return "";
    case ParamKind::int_pair_or_auto:
      if (value == "auto") return "";
      if (value.is_string()) return expected;
      [[fallthrough]];
    case ParamKind::int_pair: {
      if (value.is_number_integer()) return check_bounds(spec, value.get<double>());
      if (!all_integers(value, 2)) return expected;
      for (const auto& v : value)
        if (auto e = check_bounds(spec, v.get<double>()); !e.empty()) return e;
      return "";
    }
    case ParamKind::padding: {
      if (value.is_string())
        return value == "same" || value == "valid" ? "" : "must be \"same\" or \"valid\" when a string, got " + quote(value);
      if (value.is_number_integer()) return value.get<double>() >= 0 ? check_bounds(spec, value.get<double>())
                                                                     : "must be >= 0, got " + quote(value);
      if (!all_integers(value, 2) && !all_integers(value, 4)) return expected;
      for (const auto& v : value) {
        if (v.get<double>() < 0) return "must be >= 0 on every side, got " + quote(value);
        if (auto e = check_bounds(spec, v.get<double>()); !e.empty()) return e;
      }
      return "";
    }
    case ParamKind::number_pair: {
      if (!value.is_array() || value.size() != 2) return expected;
      for (const auto& v : value) {
        if (!v.is_number() || !std::isfinite(v.get<double>())) return expected;
        if (auto e = check_bounds(spec, v.get<double>()); !e.empty()) return e;
      }
      return "";
    }
  }
  return "";
}

int get_int(const json& params, const std::string& key) { return params.at(key).get<int>(); }
double get_number(const json& params, const std::string& key) { return params.at(key).get<double>(); }

std::array<int, 2> get_int_pair(const json& params, const std::string& key) {
  const json& v = params.at(key);
  if (v.is_number_integer()) return {v.get<int>(), v.get<int>()};
  return {v.at(0).get<int>(), v.at(1).get<int>()};
}

std::array<double, 2> get_number_pair(const json& params, const std::string& key) {
  const json& v = params.at(key);
  return {v.at(0).get<double>(), v.at(1).get<double>()};
}

Padding resolve_padding(const json& p, std::array<int, 2> kernel, std::array<int, 2> dilation) {
  if (p.is_string()) return p == "same" ? same_padding(kernel, dilation) : Padding{};
  if (p.is_number_integer()) {
    const int n = p.get<int>();
    return {n, n, n, n};
  }
  if (p.size() == 2) return {p[0].get<int>(), p[0].get<int>(), p[1].get<int>(), p[1].get<int>()};
  return {p[0].get<int>(), p[1].get<int>(), p[2].get<int>(), p[3].get<int>()};
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(3, word.size() / 2) + 1;
  for (const auto& c : candidates) {
    // the distance is at least the difference in length: a 10 MB word costs nothing
    if (std::max(word.size(), c.size()) - std::min(word.size(), c.size()) >= best_distance) continue;
    if (const auto d = edit_distance(word, c); d < best_distance) best = c, best_distance = d;
  }
  return best;
}

}  // namespace attnconv
