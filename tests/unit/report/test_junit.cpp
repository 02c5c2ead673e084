#include <catch2/catch.hpp>

#include "report/junit.hpp"

using namespace attnconv;

TEST_CASE("XML escaping covers markup, quotes and forbidden control characters", "[junit]") {
  CHECK(xml_escape("a<b>&\"c\"'d'") == "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;");
  CHECK(xml_escape("x\ty\nz") == "x&#9;y&#10;z");
  CHECK(xml_escape(std::string("bell\x07")) == "bell\xEF\xBF\xBD");
  CHECK(xml_escape("\xC3\xA9") == "\xC3\xA9");  // UTF-8 passes through
}

TEST_CASE("one testcase per case; failures and errors carry their message", "[junit]") {
  const nlohmann::json report = {
      {"summary", {{"total", 3}, {"passed", 1}, {"failed", 1}, {"errored", 1}, {"seconds", 0.5}}},
      {"environment", {{"host", "h"}, {"start_time", "2026-01-01T00:00:00Z"}}},
      {"cases",
       {{{"name", "ok"}, {"proof", "p.one"}, {"status", "pass"}, {"message", "fine"}, {"seconds", 0.1}},
        {{"name", "bad[alpha=1]"}, {"proof", "p.one"}, {"status", "fail"}, {"message", "max_abs = 3 > 1e-10 <&>"},
         {"seconds", 0.2}},
        {{"name", "boom"}, {"proof", "p.two"}, {"status", "error"}, {"message", "error: no file \"x.npy\""},
         {"seconds", 0.2}}}}};
  const std::string xml = junit_xml(report);
  CHECK_THAT(xml, Catch::StartsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"));
  CHECK_THAT(xml, Catch::Contains("<testsuites name=\"attnconv\" tests=\"3\" failures=\"1\" errors=\"1\""));
  CHECK_THAT(xml, Catch::Contains("<testsuite name=\"p.one\" tests=\"2\" failures=\"1\" errors=\"0\""));
  CHECK_THAT(xml, Catch::Contains("<testcase classname=\"p.one\" name=\"ok\""));
  CHECK_THAT(xml, Catch::Contains("<failure message=\"max_abs = 3 &gt; 1e-10 &lt;&amp;&gt;\" type=\"fail\">"));
  CHECK_THAT(xml, Catch::Contains("<error message=\"error: no file &quot;x.npy&quot;\" type=\"error\">"));
}
