#include "io/json_reader.hpp"

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
  explicit CountingReader(json& result) : dom_(result, false) {}

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
  std::size_t depth_ = 0, keys_ = 0;
};

// The members of every object in `value` (its depth is at most max_json_depth).
std::size_t members(const json& value) {
  std::size_t n = value.is_object() ? value.size() : 0;
  if (value.is_structured())
    for (const json& child : value) n += members(child);
  return n;
}

}  // namespace

json parse_case_json(const std::string& text, const std::string& path) {
  json result;
  CountingReader counting(result);
  if (json::sax_parse(text, &counting) && members(result) == counting.keys()) return result;
  result = json();  // malformed, too deep or a key repeated: parsed again for where
  StrictReader reader(result, text, path);
  json::sax_parse(text, &reader);
  return result;
}

}  // namespace attnconv
