#include <catch2/catch.hpp>

#include "report/html_report.hpp"
#include "io/errors.hpp"

using namespace attnconv;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

nlohmann::json entry(const std::string& name, const std::string& status, const std::string& verdict,
                     const std::string& message) {
  return {{"name", name},       {"proof", "p.none"}, {"status", status}, {"verdict", verdict},
          {"message", message}, {"params", {{"seed", 1}}}, {"metrics", {{"max_abs", 0.5}, {"rel_l2", 0.25}}},
          {"seconds", 0.1},     {"provenance", {{"input", {{"file", "x<1>.npy"}, {"bytes", 8}, {"sha256", "ab"}}}}}};
}

}  // namespace

TEST_CASE("the page escapes what the report holds, lists failures first, one tbody per case", "[html]") {
  const nlohmann::json report = {
      {"summary", {{"total", 3}, {"passed", 1}, {"failed", 1}, {"errored", 1}, {"seconds", 0.5}}},
      {"tool", {{"name", "attnconv"}, {"version", "0"}, {"git_commit", "c0ffee"}}},
      {"cases",
       {entry("ok<script>alert(1)</script>", "pass", "holds", "fine & <b>bold</b>"),
        entry("bad", "fail", "fails", "max_abs = 0.5 > 1e-10"),
        entry("boom", "error", "error", "error: \"quoted\"")}}};
  const std::string page = html_report(report, "r<e>port.json");
  CHECK(count(page, "<script>") == 2);  // the page's own two
  CHECK(page.find("alert(1)</script>") == std::string::npos);
  CHECK(page.find("ok&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(page.find("fine &amp; &lt;b&gt;bold&lt;/b&gt;") != std::string::npos);
  CHECK(page.find("r&lt;e&gt;port.json") != std::string::npos);
  CHECK(page.find("x&lt;1&gt;.npy") != std::string::npos);  // the loaded file, in the header and the row
  CHECK(count(page, "<tbody") == 3);
  CHECK(page.find("id=case-1 ") < page.find("id=case-2 "));  // failed, then errored, then passed
  CHECK(page.find("id=case-2 ") < page.find("id=case-0 "));
  CHECK(page.find("c0ffee") != std::string::npos);
  CHECK(page.find("://") == std::string::npos);  // no address to fetch
  // the findings gather the messages of the failing and erring cases, not of those that hold
  const std::string findings = page.substr(page.find("id=\"findings\""));
  CHECK(findings.find("max_abs = 0.5 &gt; 1e-10") != std::string::npos);
  CHECK(findings.find("error: &quot;quoted&quot;") != std::string::npos);
  CHECK(findings.find("fine &amp;") == std::string::npos);
}

TEST_CASE("a report without a list of cases is refused", "[html]") {
  CHECK_THROWS_AS(html_report(nlohmann::json::object(), "r.json"), InputError);
  CHECK_THROWS_AS(html_report({{"cases", {{{"name", "x"}}}}}, "r.json"), InputError);
}
