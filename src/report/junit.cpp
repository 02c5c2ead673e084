#include "report/junit.hpp"

#include <cstdio>
#include <map>
#include <utility>
#include <vector>

#include "proof/verdict.hpp"

namespace attnconv {

namespace {

// The code point of the UTF-8 sequence at text[k], and its length; -1 for a
// byte that does not start a well-formed sequence (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF).
std::pair<long, std::size_t> decode_utf8(const std::string& text, std::size_t k) {
  const auto byte = [&](std::size_t i) { return k + i < text.size() ? static_cast<unsigned char>(text[k + i]) : 0u; };
  const unsigned lead = byte(0);
  if (lead < 0x80) return {long(lead), 1};
  const std::size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
  if (length == 0 || lead > 0xF4) return {-1, 1};
  long code = long(lead & (0x7F >> length));
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return {-1, 1};
    code = (code << 6) | long(byte(i) & 0x3F);
  }
  static constexpr long smallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < smallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return {-1, 1};
  return {code, length};
}

// XML 1.0, section 2.2: Char ::= #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
bool xml_char(long code) {
  return code == 0x9 || code == 0xA || code == 0xD || (code >= 0x20 && code <= 0xD7FF) ||
         (code >= 0xE000 && code <= 0xFFFD) || (code >= 0x10000 && code <= 0x10FFFF);
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t k = 0; k < text.size();) {
    const auto [code, length] = decode_utf8(text, k);
    switch (code) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\t': out += "&#9;"; break;
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      default:
        if (xml_char(code))
          out.append(text, k, length);
        else
          out += "\xEF\xBF\xBD";  // U+FFFD: XML 1.0 has no way to write these
    }
    k += length;
  }
  return out;
}

namespace {

std::string seconds_text(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6f", seconds);
  return buffer;
}

std::string attribute(const std::string& name, const std::string& value) {
  return " " + name + "=\"" + xml_escape(value) + "\"";
}

}  // namespace

std::string junit_xml(const nlohmann::json& report) {
  std::map<std::string, std::vector<const nlohmann::json*>> by_proof;
  static const nlohmann::json no_cases = nlohmann::json::array();
  const nlohmann::json& cases = report.contains("cases") ? report["cases"] : no_cases;
  for (const auto& c : cases) by_proof[c.value("proof", "")].push_back(&c);
  const auto& summary = report.value("summary", nlohmann::json::object());
  const auto& environment = report.value("environment", nlohmann::json::object());

  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites" + attribute("name", "attnconv") +
                    attribute("tests", std::to_string(summary.value("total", 0))) +
                    attribute("failures", std::to_string(summary.value("failed", 0))) +
                    attribute("errors", std::to_string(summary.value("errored", 0))) +
                    attribute("time", seconds_text(summary.value("seconds", 0.0))) + ">\n";
  constexpr auto replace = nlohmann::json::error_handler_t::replace;
  for (const auto& [proof, cases] : by_proof) {
    int failures = 0, errors = 0;
    double time = 0;
    for (const auto* c : cases) {
      failures += entry_status(*c) == Status::fail;
      errors += entry_status(*c) == Status::error;
      time += c->value("seconds", 0.0);
    }
    xml += "  <testsuite" + attribute("name", proof) + attribute("tests", std::to_string(cases.size())) +
           attribute("failures", std::to_string(failures)) + attribute("errors", std::to_string(errors)) +
           attribute("skipped", "0") + attribute("time", seconds_text(time)) +
           attribute("timestamp", environment.value("start_time", "")) +
           attribute("hostname", environment.value("host", "")) + ">\n";
    for (const auto* c : cases) {
      const std::optional<Status> status = entry_status(*c);
      const std::string message = c->value("message", "");
      xml += "    <testcase" + attribute("classname", proof) + attribute("name", c->value("name", "")) +
             attribute("file", c->value("file", "")) + attribute("time", seconds_text(c->value("seconds", 0.0)));
      const std::string body = message + "\nmetrics: " + c->value("metrics", nlohmann::json::object()).dump(-1, ' ', false, replace) +
                               "\ntolerance: " + c->value("tolerance", nlohmann::json::object()).dump(-1, ' ', false, replace) +
                               "\nparams: " + c->value("params", nlohmann::json::object()).dump(-1, ' ', false, replace);
      if (status == Status::fail || status == Status::error) {
        const std::string tag = status == Status::fail ? "failure" : "error";
        xml += ">\n      <" + tag + attribute("message", message) + attribute("type", to_string(*status)) + ">" + xml_escape(body) +
               "</" + tag + ">\n    </testcase>\n";
      } else {
        xml += "/>\n";
      }
    }
    xml += "  </testsuite>\n";
  }
  xml += "</testsuites>\n";
  return xml;
}

}  // namespace attnconv
