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

TEST_CASE("a page of many cases shows the details of the first cases of the table and says what it leaves out", "[html]") {
  nlohmann::json report = {{"cases", nlohmann::json::array()}};
  for (int k = 0; k < 5; ++k)
    report["cases"].push_back(entry("case" + std::to_string(k), k == 3 ? "fail" : "pass", k == 3 ? "fails" : "holds",
                                    "message " + std::to_string(k)));
  const std::string full = html_report(report, "r.json");
  CHECK(count(full, "<b>params</b>") == 5);
  CHECK(full.find("id=\"omitted\"") == std::string::npos);

  const std::string page = html_report(report, "r.json", {.figures = 0, .details = 2});
  CHECK(count(page, "<tbody") == 5);
  CHECK(count(page, "<b>params</b>") == 2);      // the failed case, then the first that passed
  CHECK(count(page, "<p class=omit>") == 3);
  CHECK(page.find("id=case-3 ") < page.find("<b>params</b>"));
  CHECK(count(page, "message ") == 5 + 1);      // every row keeps its message (and the failure is a finding)
  const std::string note = page.substr(page.find("id=\"omitted\""), 400);
  CHECK(note.find("first 2 cases") != std::string::npos);
  CHECK(note.find("other 3;") != std::string::npos);
  CHECK(note.find("--figures all --details all") != std::string::npos);

  CHECK(parse_html_limit("all") == HtmlLimits::all);
  CHECK(parse_html_limit("0") == 0u);
  CHECK(parse_html_limit("250") == 250u);
  for (const char* bad : {"", "-1", "1e3", "ten", "99999999999999999"}) CHECK_FALSE(parse_html_limit(bad));
}
