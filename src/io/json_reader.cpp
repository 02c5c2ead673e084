#include "io/json_reader.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "io/errors.hpp"
#include "io/quote.hpp"

namespace attnconv {

using json = nlohmann::json;

namespace {

// nlohmann's DOM builder, plus the key path of every event and a check for
// repeated keys (SAX interface of nlohmann::json::sax_parse).
class StrictReader {
 public:
  StrictReader(json& result, const std::string& text, std::string path)  // `text` outlives the reader
      : dom_(result, false), text_(text), path_(std::move(path)) {}

  bool null() { return value(), dom_.null(); }
  bool boolean(bool v) { return value(), dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return value(), dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return value(), dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) { return value(), dom_.number_float(v, s); }
  bool string(json::string_t& v) {
    value();
    if (frames_.size() == 3 && in_cases() && frames_[2].key == "name") case_names_[frames_[1].index] = v;
    return dom_.string(v);
  }
  bool binary(json::binary_t& v) { return value(), dom_.binary(v); }
  bool start_object(std::size_t n) {
    value();
    check_depth();
    frames_.push_back({false});
    return dom_.start_object(n);
  }
  bool start_array(std::size_t n) {
    value();
    check_depth();
    frames_.push_back({true});
    return dom_.start_array(n);
  }
  bool end_object() { return frames_.pop_back(), dom_.end_object(); }
  bool end_array() { return frames_.pop_back(), dom_.end_array(); }
  bool key(json::string_t& k) {
    Frame& top = frames_.back();
    top.key = k;
    if (!top.keys.insert(k).second)
      throw InputError(where() + "key '" + clip(key_path()) + "': appears twice in one object (JSON keeps only the last)");
    return dom_.key(k);
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    std::string what = e.what();
    const auto start = what.find("] ");
    if (start != std::string::npos) what = what.substr(start + 2);
    const auto at = what.find(": ");  // "parse error at line 3, column 5: syntax error ..." -> keep the reason
    if (what.rfind("parse error", 0) == 0 && at != std::string::npos) what = what.substr(at + 2);
    std::size_t line = 1, column = 1;
    for (std::size_t k = 0; k + 1 < position && k < text_.size(); ++k)
      text_[k] == '\n' ? (++line, column = 1) : ++column;
    const std::string key = frames_.empty() || key_path(true).empty() ? "" : "key '" + clip(key_path(true)) + "': ";
    throw InputError(path_ + ": malformed JSON at line " + std::to_string(line) + ", column " + std::to_string(column) +
                     ": " + (case_label().empty() ? "" : case_label() + ": ") + key + clip(what));
  }

 private:
  struct Frame {
    bool array;
    std::size_t index = 0;  // arrays: the element being read
    std::string key = {};   // objects: the key being read
    std::set<std::string> keys = {};
    bool started = false;
  };

  // Deeper values are refused while parsing: copying or printing them
  // recurses once per level (nlohmann::json), which overflows the stack.
  void check_depth() const {
    if (frames_.size() >= max_json_depth)
      throw InputError(where() + "key '" + clip(key_path()) + "': nested deeper than " +
                       std::to_string(max_json_depth) + " arrays or objects");
  }

  // A value starts: arrays count their elements.
  void value() {
    if (frames_.empty() || !frames_.back().array) return;
    Frame& top = frames_.back();
    if (top.started) ++top.index;
    top.started = true;
  }

  // "case 'c1'" or "case #2" inside "cases", else empty.
  std::string case_label() const {
    if (frames_.size() < 3 || !in_cases()) return "";
    const auto found = case_names_.find(frames_[1].index);
    return found != case_names_.end() ? "case '" + clip(found->second) + "'" : "case #" + std::to_string(frames_[1].index + 1);
  }

  bool in_cases() const { return frames_.size() >= 2 && frames_[0].key == "cases" && frames_[1].array; }

  // The path of the current key, relative to the case when inside one;
  // `pending`: a value is being read that no event announced yet.
  std::string key_path(bool pending = false) const {
    std::size_t first = case_label().empty() ? 0 : 2;
    std::string out;
    for (std::size_t k = first; k < frames_.size(); ++k) {
      const Frame& f = frames_[k];
      const bool next = pending && k + 1 == frames_.size();
      if (f.array && (f.started || next)) out += "[" + std::to_string(f.index + (next && f.started)) + "]";
      if (!f.array && !f.key.empty()) out += (out.empty() ? "" : ".") + f.key;
    }
    return out;
  }

  std::string where() const { return path_ + ": " + (case_label().empty() ? "" : case_label() + ": "); }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const std::string& text_;  // for the line and column of an error, not copied (a report may be 1 GiB)
  std::string path_;
  std::vector<Frame> frames_;
  std::map<std::size_t, std::string> case_names_;
};

// The same DOM and the same refusals as StrictReader, without the bookkeeping
// its messages need (a key path per event, a set of keys per object): it only
// counts keys and depth, and gives up at the first problem. A repeated key
// shows afterwards as an object with fewer members than keys were read.
// parse_case_json runs StrictReader for the message whenever this one gives up.
class CountingReader {
 public:
  // `depth`: the arrays and objects around the text parsed (a block of items of
  // an array inside the top-level object is one level deeper than its text shows).
  explicit CountingReader(json& result, std::size_t depth = 0) : dom_(result, false), depth_(depth) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) { return dom_.number_float(v, s); }
  bool string(json::string_t& v) { return dom_.string(v); }
  bool binary(json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) { return depth_++ < max_json_depth && dom_.start_object(n); }
  bool start_array(std::size_t n) { return depth_++ < max_json_depth && dom_.start_array(n); }
  bool end_object() { return --depth_, dom_.end_object(); }
  bool end_array() { return --depth_, dom_.end_array(); }
  bool key(json::string_t& k) { return ++keys_, dom_.key(k); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  std::size_t keys() const { return keys_; }

 private:
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::size_t depth_, keys_ = 0;
};

// The members of every object in `value` (its depth is at most max_json_depth).
std::size_t members(const json& value) {
  std::size_t n = value.is_object() ? value.size() : 0;
  if (value.is_structured())
    for (const json& child : value) n += members(child);
  return n;
}

// Parses `text` with CountingReader into `result`: false at the first problem.
bool parse_counting(const std::string& text, json& result, std::size_t depth = 0) {
  CountingReader counting(result, depth);
  return json::sax_parse(text, &counting) && members(result) == counting.keys();
}

// The longest array that is the value of a key of the top-level object: the
// offsets of its '[' and ']', of the first character of each item (an empty
// array has one, empty), and of its key's string (quotes included). Found by
// following only strings and brackets; a text that is not JSON may give
// anything, which the parse of the pieces then refuses.
struct LongArray {
  std::size_t open = 0, close = 0, key_first = 0, key_last = 0;
  std::vector<std::size_t> items;
};

LongArray find_long_array(const std::string& text) {
  LongArray best, current;
  std::size_t depth = 0, string_first = 0, key_first = 0, key_last = 0;
  bool top_object = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      string_first = i;
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
      if (depth == 1) key_first = string_first, key_last = i;  // the last string before a '[' is its key
    } else if (c == '{' || c == '[') {
      if (depth == 0) top_object = c == '{';
      if (++depth == 2 && c == '[' && top_object) current = {i, 0, key_first, key_last, {i + 1}};
    } else if (c == ',' && depth == 2 && !current.items.empty()) {
      current.items.push_back(i + 1);
    } else if (c == '}' || c == ']') {
      if (depth == 2 && !current.items.empty()) {
        current.close = i;
        if (current.items.size() > best.items.size()) best = std::move(current);
        current = {};
      }
      if (depth > 0) --depth;
    }
  }
  return best;
}

// parse_case_json's result for `text` split at its long array, or false when a
// piece gives up (or the text has no long array).
bool parse_split(const std::string& text, const ForEachBlock& for_each, JsonSplit split, json& result) {
  const std::size_t block_items = std::max<std::size_t>(1, split.block_items);
  const LongArray array = find_long_array(text);
  const std::size_t n = array.items.size();
  if (n <= split.min_items) return false;
  // The text with the array emptied, and the array's items, a block at a time.
  if (!parse_counting(text.substr(0, array.open + 1) + text.substr(array.close), result) || !result.is_object())
    return false;
  const std::size_t blocks = n / block_items + (n % block_items != 0);
  std::vector<json> parsed(blocks);
  std::vector<char> parsed_ok(blocks, 0);
  for_each(blocks, [&](std::size_t b) {
    const std::size_t first = b * block_items, last = std::min(n, first + block_items);
    const std::size_t end = last < n ? array.items[last] - 1 : array.close;  // the ',' or ']' after the block
    const std::string piece = "[" + text.substr(array.items[first], end - array.items[first]) + "]";
    parsed_ok[b] = parse_counting(piece, parsed[b], 1) && parsed[b].size() == last - first;
  });
  json key;
  if (std::count(parsed_ok.begin(), parsed_ok.end(), 0) > 0 ||
      !parse_counting(text.substr(array.key_first, array.key_last + 1 - array.key_first), key) || !key.is_string())
    return false;
  const auto found = result.find(key.get_ref<const std::string&>());
  if (found == result.end() || !found->is_array() || !found->empty()) return false;
  json::array_t& items = found->get_ref<json::array_t&>();
  items.reserve(n);
  for (json& block : parsed)
    for (json& item : block) items.push_back(std::move(item));
  return items.size() == n;
}

}  // namespace

json parse_case_json(const std::string& text, const std::string& path, const ForEachBlock& for_each,
                     JsonSplit split) {
  json result;
  if (parse_split(text, for_each, split, result)) return result;
  return parse_case_json(text, path);
}

json parse_case_json(const std::string& text, const std::string& path) {
  json result;
  if (parse_counting(text, result)) return result;
  result = json();  // malformed, too deep or a key repeated: parsed again for where
  StrictReader reader(result, text, path);
  json::sax_parse(text, &reader);
  return result;
}

}  // namespace attnconv
