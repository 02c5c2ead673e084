#include "io/quote.hpp"

#include <algorithm>
#include <cstdio>

namespace attnconv {

namespace {

using json = nlohmann::json;

// A control character (NUL, ESC, ...) would cut or rewrite the message on a terminal.
bool is_control(char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; }

// The length of the UTF-8 character starting at text[k] (2 to 4 bytes;
// RFC 3629, section 4: no overlong form, no surrogate, at most U+10FFFF), or
// 0 when the bytes there are not one.
std::size_t utf8_length(const std::string& text, std::size_t k) {
  const auto byte = [&](std::size_t i) { return k + i < text.size() ? static_cast<unsigned char>(text[k + i]) : 0u; };
  const unsigned lead = byte(0);
  const std::size_t length = lead >= 0xC2 && lead <= 0xDF ? 2 : lead >= 0xE0 && lead <= 0xEF ? 3 : lead >= 0xF0 && lead <= 0xF4 ? 4 : 0;
  if (length == 0) return 0;
  // The second byte's range depends on the lead (the table of RFC 3629, section 4).
  const unsigned low = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80;
  const unsigned high = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
  if (byte(1) < low || byte(1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i)
    if ((byte(i) & 0xC0) != 0x80) return 0;
  return length;
}

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
  std::string shown;
  for (std::size_t k = 0; k < text.size();) {
    const auto ch = static_cast<unsigned char>(text[k]);
    const std::size_t length = ch < 0x80 ? 1 : utf8_length(text, k);
    // U+0080 ... U+009F (C1 controls: CSI, OSC, ...) act as ESC sequences on some terminals.
    const bool c1 = length == 2 && ch == 0xC2 && static_cast<unsigned char>(text[k + 1]) < 0xA0;
    char escaped[8];
    if (is_control(text[k])) std::snprintf(escaped, sizeof escaped, "\\u%04x", unsigned(ch));
    else if (c1) std::snprintf(escaped, sizeof escaped, "\\u%04x", unsigned(static_cast<unsigned char>(text[k + 1])));
    else if (length == 0) std::snprintf(escaped, sizeof escaped, "\\x%02X", unsigned(ch));
    const std::string unit = is_control(text[k]) || c1 || length == 0 ? std::string(escaped) : text.substr(k, length);
    if (shown.size() + unit.size() > limit) return shown + "...";
    shown += unit;
    k += std::max<std::size_t>(length, 1);
  }
  return shown;
}

std::string quote(const json& value, std::size_t limit) {
  std::string out;
  append(value, out, limit);
  return clip(std::move(out), limit);
}

}  // namespace attnconv
