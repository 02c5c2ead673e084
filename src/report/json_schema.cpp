#include "report/json_schema.hpp"

#include <array>
#include <cmath>
#include <optional>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "parallel/threads.hpp"

namespace attnconv {

using json = nlohmann::json;

namespace {

// Appends `value` as JSON to `out`, stopping once `out` holds `limit`
// characters: never deeper than that, whatever the nesting.
void dump_bounded(const json& value, std::string& out, std::size_t limit) {
  if (out.size() >= limit) return;
  if (value.is_array() || value.is_object()) {
    out += value.is_array() ? '[' : '{';
    bool first = true;
    for (auto it = value.begin(); it != value.end() && out.size() < limit; ++it, first = false) {
      if (!first) out += ',';
      if (value.is_object()) out += json(it.key()).dump(-1, ' ', false, json::error_handler_t::replace) + ':';
      dump_bounded(*it, out, limit);
    }
    out += value.is_array() ? ']' : '}';
  } else {
    out += value.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

// A value quoted in a message: at most ~60 characters.
std::string shown(const json& value) {
  std::string text;
  dump_bounded(value, text, 61);
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

std::string type_of(const json& value) {
  if (value.is_null()) return "null";
  if (value.is_boolean()) return "boolean";
  if (value.is_number_integer()) return "integer";
  if (value.is_number()) return "number";
  if (value.is_string()) return "string";
  if (value.is_array()) return "array";
  return "object";
}

bool has_type(const json& value, const std::string& type) {
  if (type == "integer")
    return value.is_number_integer() || (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>());
  if (type == "number") return value.is_number();
  return type_of(value) == type;
}

// The JSON Schema equality of two instances: 1 and 1.0 are equal.
bool equal(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  return a == b;
}

// Where a value sits in the instance, made into text ("cases[3].status") only
// when a violation is reported: the validator walks every value of a report.
struct Path {
  const Path* parent = nullptr;
  const std::string* key = nullptr;  // a member's key, or nullptr for the item `index`
  std::size_t index = 0;

  Path member(const std::string& name) const { return {this, &name, 0}; }
  Path item(std::size_t k) const { return {this, nullptr, k}; }
  std::string text() const {
    if (!parent) return "";
    std::string prefix = parent->text();
    if (!key) return prefix + "[" + std::to_string(index) + "]";
    return prefix.empty() ? *key : prefix + "." + *key;
  }
};

class Validator {
 public:
  explicit Validator(const json& root, bool worker = false) : root_(root), worker_(worker) {}

  enum Keyword { k_ref, k_additionalProperties, k_allOf, k_anyOf, k_const, k_else, k_enum, k_exclusiveMaximum, k_exclusiveMinimum, k_if, k_items, k_maxItems, k_maxLength, k_maxProperties, k_maximum, k_minItems, k_minLength, k_minProperties, k_minimum, k_not, k_oneOf, k_pattern, k_properties, k_required, k_then, k_type, k_uniqueItems, keyword_count };
  static constexpr const char* keyword_names[] = {"$ref", "additionalProperties", "allOf", "anyOf", "const", "else", "enum", "exclusiveMaximum", "exclusiveMinimum", "if", "items", "maxItems", "maxLength", "maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum", "not", "oneOf", "pattern", "properties", "required", "then", "type", "uniqueItems"};

  // The first violation under `path`, if any; with `explain` false (the
  // branches of if, not, anyOf and a first pass over oneOf, where only
  // whether the value matches counts) the violation's text is left empty.
  std::optional<std::string> check(const json& schema, const json& value, const Path& path, bool explain,
                                   int depth = 0) const {
    if (depth > 64) throw std::logic_error("JSON Schema: $ref nesting deeper than 64");
    const auto fail = [&](const Path& where, auto&& what) -> std::optional<std::string> {
      return explain ? violation(where, what()) : std::string();
    };
    if (schema.is_boolean()) return schema.get<bool>() ? std::nullopt : fail(path, [] { return "is not allowed here"; });
    if (!schema.is_object()) throw std::logic_error("JSON Schema: a schema must be an object or a boolean");
    const Keywords& kw = keywords(schema);

    if (kw[k_ref]) {
      const std::string& ref = kw[k_ref]->get_ref<const std::string&>();
      const std::string prefix = "#/$defs/";
      if (ref.rfind(prefix, 0) != 0 || !root_.contains("$defs") || !root_["$defs"].contains(ref.substr(prefix.size())))
        throw std::logic_error("JSON Schema: unresolvable $ref '" + ref + "'");
      if (auto e = check(root_["$defs"][ref.substr(prefix.size())], value, path, explain, depth + 1)) return e;
    }
    if (kw[k_type]) {
      const json& types = (*kw[k_type]);
      bool ok = types.is_string() && has_type(value, types.get_ref<const std::string&>());
      if (types.is_array())
        for (const auto& t : types) ok = ok || has_type(value, t.get_ref<const std::string&>());
      if (!ok)
        return fail(path, [&] {
          std::string wanted;
          for (const auto& t : types.is_array() ? types : json::array({types}))
            wanted += (wanted.empty() ? "" : " or ") + t.get<std::string>();
          return "must be " + wanted + ", got " + (value.is_null() ? "null" : type_of(value) + " " + shown(value));
        });
    }
    if (kw[k_const] && !equal((*kw[k_const]), value))
      return fail(path, [&] { return "must be " + shown((*kw[k_const])) + ", got " + shown(value); });
    if (kw[k_enum]) {
      bool ok = false;
      for (const auto& option : (*kw[k_enum])) ok = ok || equal(option, value);
      if (!ok)
        return fail(path, [&] {
          std::string allowed;
          for (const auto& option : (*kw[k_enum])) allowed += (allowed.empty() ? "" : ", ") + shown(option);
          return "must be one of " + allowed + ", got " + shown(value);
        });
    }
    if (value.is_number()) {
      const double x = value.get<double>();
      if (kw[k_minimum] && !(x >= (*kw[k_minimum]).get<double>()))
        return fail(path, [&] { return "must be >= " + shown((*kw[k_minimum])) + ", got " + shown(value); });
      if (kw[k_exclusiveMinimum] && !(x > (*kw[k_exclusiveMinimum]).get<double>()))
        return fail(path, [&] { return "must be > " + shown((*kw[k_exclusiveMinimum])) + ", got " + shown(value); });
      if (kw[k_maximum] && !(x <= (*kw[k_maximum]).get<double>()))
        return fail(path, [&] { return "must be <= " + shown((*kw[k_maximum])) + ", got " + shown(value); });
      if (kw[k_exclusiveMaximum] && !(x < (*kw[k_exclusiveMaximum]).get<double>()))
        return fail(path, [&] { return "must be < " + shown((*kw[k_exclusiveMaximum])) + ", got " + shown(value); });
    }
    if (value.is_string()) {
      const std::string& text = value.get_ref<const std::string&>();
      if (kw[k_minLength] && utf8_length(text) < (*kw[k_minLength]).get<std::size_t>())
        return fail(path, [&] { return "must have at least " + shown((*kw[k_minLength])) + " characters"; });
      if (kw[k_maxLength] && utf8_length(text) > (*kw[k_maxLength]).get<std::size_t>())
        return fail(path, [&] { return "must have at most " + shown((*kw[k_maxLength])) + " characters"; });
      if (kw[k_pattern] && !matches(text, (*kw[k_pattern]).get_ref<const std::string&>()))
        return fail(path, [&] { return "must match " + shown((*kw[k_pattern])) + ", got " + shown(value); });
    }
    if (value.is_array()) {
      if (kw[k_minItems] && value.size() < (*kw[k_minItems]).get<std::size_t>())
        return fail(path, [&] {
          return "must have at least " + shown((*kw[k_minItems])) + " items, has " + std::to_string(value.size());
        });
      if (kw[k_maxItems] && value.size() > (*kw[k_maxItems]).get<std::size_t>())
        return fail(path, [&] {
          return "must have at most " + shown((*kw[k_maxItems])) + " items, has " + std::to_string(value.size());
        });
      if ((kw[k_uniqueItems] && kw[k_uniqueItems]->is_boolean() && kw[k_uniqueItems]->get<bool>()))
        for (std::size_t i = 0; i < value.size(); ++i)
          for (std::size_t j = i + 1; j < value.size(); ++j)
            if (equal(value[i], value[j]))
              return fail(path, [&] { return "must not repeat an item, repeats " + shown(value[i]); });
      if (kw[k_items]) {
        if (value.size() >= split_items && !worker_) return check_items_split(*kw[k_items], value, path, explain, depth);
        for (std::size_t k = 0; k < value.size(); ++k)
          if (auto e = check((*kw[k_items]), value[k], path.item(k), explain, depth)) return e;
      }
    }
    if (value.is_object()) {
      if (kw[k_required])
        for (const auto& key : (*kw[k_required]))
          if (!value.contains(key.get_ref<const std::string&>()))
            return fail(path.member(key.get_ref<const std::string&>()), [] { return "missing"; });
      if (kw[k_minProperties] && value.size() < (*kw[k_minProperties]).get<std::size_t>())
        return fail(path, [&] { return "must have at least " + shown((*kw[k_minProperties])) + " keys"; });
      if (kw[k_maxProperties] && value.size() > (*kw[k_maxProperties]).get<std::size_t>())
        return fail(path, [&] { return "must have at most " + shown((*kw[k_maxProperties])) + " keys"; });
      static const json no_properties = json::object();
      const json& properties = kw[k_properties] ? (*kw[k_properties]) : no_properties;
      if (!kw[k_additionalProperties]) {
        // Only the named members are checked: each looked up in the value. Both
        // objects keep their keys sorted, so the first violation is the same one
        // a walk over the value's keys would meet.
        for (auto it = properties.begin(); it != properties.end(); ++it)
          if (const auto child = value.find(it.key()); child != value.end())
            if (auto e = check(*it, *child, path.member(it.key()), explain, depth)) return e;
      } else {
        const json& extra = (*kw[k_additionalProperties]);
        for (auto it = value.begin(); it != value.end(); ++it) {
          const Path where = path.member(it.key());
          if (const auto named = properties.find(it.key()); named != properties.end()) {
            if (auto e = check(*named, *it, where, explain, depth)) return e;
          } else if (extra.is_boolean() && !extra.get<bool>()) {
            return fail(where, [&] { return "unknown key (allowed: " + key_list(properties) + ")"; });
          } else if (auto e = check(extra, *it, where, explain, depth)) {
            return e;
          }
        }
      }
    }
    if (kw[k_allOf])
      for (const auto& part : (*kw[k_allOf]))
        if (auto e = check(part, value, path, explain, depth)) return e;
    if (kw[k_anyOf]) {
      bool any = false;
      for (const auto& part : (*kw[k_anyOf])) any = any || !check(part, value, path, false, depth);
      if (!any) return fail(path, [&] { return "matches none of its allowed forms, got " + shown(value); });
    }
    if (kw[k_not] && !check((*kw[k_not]), value, path, false, depth))
      return fail(path, [&] { return "must not be " + shown(value); });
    if (kw[k_oneOf]) {
      std::size_t matches = 0;
      for (const auto& part : (*kw[k_oneOf])) matches += !check(part, value, path, false, depth);
      if (matches == 0 && explain) {
        std::optional<std::string> deepest;  // the violation inside the form the value came closest to
        for (const auto& part : (*kw[k_oneOf])) {
          const auto e = check(part, value, path, true, depth);
          if (!deepest || e->find(": ") > deepest->find(": ")) deepest = e;
        }
        if (deepest && deepest->find(": ") > violation(path, "").find(": ")) return deepest;
      }
      if (matches != 1)
        return fail(path, [&] {
          return matches == 0 ? "matches none of its allowed forms, got " + shown(value)
                              : "matches more than one of its allowed forms";
        });
    }
    if (kw[k_if]) {
      const bool holds = !check((*kw[k_if]), value, path, false, depth);
      if (const json* branch = kw[holds ? k_then : k_else])
        if (auto e = check(*branch, value, path, explain, depth)) return e;
    }
    return std::nullopt;
  }

  // The values of a schema object's validation keywords, found once per
  // schema object (its keywords checked against the supported subset then).
  using Keywords = std::array<const json*, keyword_count>;
  const Keywords& keywords(const json& schema) const {
    const auto found = keywords_.find(&schema);
    if (found != keywords_.end()) return found->second;
    Keywords k{};
    for (const auto& [keyword, argument] : schema.items()) {
      if (!known_keywords().count(keyword)) throw std::logic_error("JSON Schema: unsupported keyword '" + keyword + "'");
      for (std::size_t n = 0; n < keyword_count; ++n)
        if (keyword == keyword_names[n]) k[n] = &argument;
    }
    return keywords_.emplace(&schema, k).first->second;
  }

 private:
  // A long array (a report's cases) is checked in blocks of items on the
  // engine threads, each thread with its own validator (the caches are not
  // shared); the violation returned is the first block's first, as one walk
  // in order would meet it.
  static constexpr std::size_t split_items = 4096, split_block = 1024;
  std::optional<std::string> check_items_split(const json& items, const json& value, const Path& path, bool explain,
                                               int depth) const {
    const std::size_t blocks = (value.size() + split_block - 1) / split_block;
    std::vector<Validator> workers(parallel_threads(blocks), Validator(root_, true));
    std::vector<std::optional<std::string>> found(blocks);
    parallel_for(blocks, [&](std::size_t b, std::size_t t) {
      for (std::size_t k = b * split_block; k < std::min(value.size(), (b + 1) * split_block) && !found[b]; ++k)
        found[b] = workers[t].check(items, value[k], path.item(k), explain, depth);
    });
    for (auto& e : found)
      if (e) return e;
    return std::nullopt;
  }

  static const std::set<std::string>& known_keywords() {
    static const std::set<std::string> keywords{
        "$schema", "$id",      "$defs",     "$ref",     "title",    "description", "default",
        "type",    "enum",     "const",     "properties", "required", "additionalProperties",
        "items",   "minItems", "maxItems",  "minimum",  "exclusiveMinimum", "maximum",
        "minLength", "pattern", "allOf",    "oneOf",    "if",       "then",        "else",
        "anyOf",   "not",      "exclusiveMaximum", "maxLength", "uniqueItems", "minProperties", "maxProperties"};
    return keywords;
  }

  bool matches(const std::string& text, const std::string& pattern) const {
    if (text.size() > 4096) return false;
    auto it = regexes_.find(pattern);
    if (it == regexes_.end()) it = regexes_.emplace(pattern, std::regex(pattern, std::regex::ECMAScript)).first;
    return std::regex_search(text, it->second);
  }

  static std::size_t utf8_length(const std::string& text) {
    std::size_t n = 0;
    for (const unsigned char ch : text) n += (ch & 0xc0) != 0x80;
    return n;
  }

  static std::string key_list(const json& properties) {
    std::string list;
    for (const auto& [key, ignored] : properties.items()) list += (list.empty() ? "" : ", ") + key;
    return list.empty() ? "none" : list;
  }

  static std::string violation(const Path& path, const std::string& what) {
    const std::string where = path.text();
    return (where.empty() ? std::string("(top level)") : where) + ": " + what;
  }

  const json& root_;
  bool worker_;  // a thread of check_items_split: splits no further
  mutable std::map<std::string, std::regex> regexes_;
  mutable std::unordered_map<const json*, Keywords> keywords_;
};

}  // namespace

std::string schema_violation(const json& schema, const json& instance) {
  return Validator(schema).check(schema, instance, Path{}, true).value_or("");
}

}  // namespace attnconv
