#include "harness/quote.hpp"

#include <algorithm>
#include <cstdio>

namespace attnconv {

namespace {

using json = nlohmann::json;

// A control character (NUL, ESC, ...) would cut or rewrite the message on a terminal.
bool is_control(char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; }

// Appends `value` to `out` until `out` is longer than `limit`.
void append(const json& value, std::string& out, std::size_t limit) {
  if (out.size() > limit) return;
  if (!value.is_structured()) {
    out += value.dump(-1, ' ', false, json::error_handler_t::replace);
    return;
  }
  out += value.is_array() ? '[' : '{';
  bool first = true;
  for (auto it = value.begin(); it != value.end() && out.size() <= limit; ++it) {
    if (!first) out += ',';
    first = false;
    if (value.is_object()) out += json(it.key()).dump(-1, ' ', false, json::error_handler_t::replace) + ':';
    append(*it, out, limit);
  }
  out += value.is_array() ? ']' : '}';
}

}  // namespace

std::string clip(std::string text, std::size_t limit) {
  if (std::any_of(text.begin(), text.end(), is_control)) {
    std::string shown;
    for (const char ch : text) {
      if (shown.size() > limit) break;
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", unsigned(static_cast<unsigned char>(ch)));
      shown += is_control(ch) ? std::string(escaped) : std::string(1, ch);
    }
    text = std::move(shown);
  }
  if (text.size() <= limit) return text;
  std::size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // UTF-8 continuation byte
  text.resize(end);
  return text + "...";
}

std::string quote(const json& value, std::size_t limit) {
  std::string out;
  append(value, out, limit);
  return clip(std::move(out), limit);
}

}  // namespace attnconv
