#include <catch2/catch.hpp>
#include <sstream>

#include "run/progress.hpp"

using namespace attnconv;

TEST_CASE("plain progress: one line per case with index, name, status, seconds, ETA", "[progress]") {
  std::ostringstream out;
  Progress progress(2, out, /*live=*/false);
  progress.case_finished({{"name", "t1[alpha=2]"}, {"status", "pass"}, {"seconds", 0.25}});
  progress.case_finished({{"name", "t2"}, {"status", "fail"}, {"seconds", 1.0}});
  progress.finish();
  const std::string text = out.str();
  CHECK_THAT(text, Catch::StartsWith("[1/2] t1[alpha=2] pass 0.250 s, ETA "));
  CHECK_THAT(text, Catch::Contains("\n[2/2] t2 fail 1.000 s, ETA 0:00\n"));
  CHECK(text.find('\r') == std::string::npos);

  // a name with a terminal escape sequence, or of 1 MB, is shown escaped and in part
  std::ostringstream odd;
  Progress odd_progress(2, odd, /*live=*/false);
  odd_progress.case_finished({{"name", "clear\x1b[2J"}, {"status", "pass"}, {"seconds", 0.0}});
  odd_progress.case_finished({{"name", std::string(1 << 20, 'n')}, {"status", "pass"}, {"seconds", 0.0}});
  CHECK_THAT(odd.str(), Catch::StartsWith("[1/2] clear\\u001b[2J pass"));
  CHECK(odd.str().find('\x1b') == std::string::npos);
  CHECK(odd.str().size() < 1000);
}

TEST_CASE("live progress redraws one line; failures stay; quiet prints nothing", "[progress]") {
  std::ostringstream live_out;
  Progress live(2, live_out, /*live=*/true);
  live.case_finished({{"name", "a"}, {"status", "pass"}, {"seconds", 0.0}});
  live.case_finished({{"name", "b"}, {"status", "error"}, {"seconds", 0.0}});
  live.finish();
  CHECK_THAT(live_out.str(), Catch::StartsWith("\r\033[K[1/2] a pass"));
  CHECK_THAT(live_out.str(), Catch::EndsWith("b error 0.000 s, ETA 0:00\n"));

  std::ostringstream quiet_out;
  Progress quiet(1, quiet_out, false, /*enabled=*/false);
  quiet.case_finished({{"name", "a"}, {"status", "pass"}, {"seconds", 0.0}});
  quiet.finish();
  CHECK(quiet_out.str().empty());
}

TEST_CASE("summary line and durations", "[progress]") {
  CHECK(summary_line({{"passed", 3}, {"failed", 1}, {"errored", 0}, {"seconds", 2.345}}) ==
        "3 passed, 1 failed, 0 errored in 2.35 s");
  CHECK(summary_line({{"passed", 3}, {"failed", 1}, {"errored", 0}, {"seconds", 2.345},
                      {"verdicts", {{"holds", 2}, {"bound holds", 1}, {"fails", 1}, {"error", 0}}}}) ==
        "3 passed, 1 failed, 0 errored in 2.35 s; 2 holds, 1 bound holds, 1 fails");
  CHECK(format_duration(59.6) == "1:00");
  CHECK(format_duration(3725) == "1:02:05");
}
