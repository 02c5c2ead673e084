// libFuzzer target: any bytes read as a report, the way merge and plot read
// one (strict JSON, then report/report_validation), and, when valid, what
// they compute from it (the sweep fits, a one-shard merge) must either work
// or be refused with InputError; the parse split into blocks of a long array
// gives the same DOM or the same message as the whole text's. Any other
// exception, a crash, a difference or a sanitizer report is a bug.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "io/errors.hpp"
#include "io/json_reader.hpp"
#include "report/merge.hpp"
#include "report/report_validation.hpp"
#include "report/sweep_fit.hpp"

namespace {

std::string dumped(const attnconv::json& j) { return j.dump(-1, ' ', false, attnconv::json::error_handler_t::replace); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string path = "fuzz-report.json";
  // The whole text's DOM, or its message.
  std::optional<attnconv::json> report;
  std::string whole;
  try {
    report = attnconv::parse_case_json(text, path);
    whole = dumped(*report);
  } catch (const attnconv::InputError& e) {
    whole = std::string("refused: ") + e.what();
  }
  // The parse split at the longest array under a key of the top-level object
  // (here of two items or more, in blocks of two, run last to first) gives the
  // same.
  const auto last_to_first = [](std::size_t n, const std::function<void(std::size_t)>& work) {
    for (std::size_t b = n; b-- > 0;) work(b);
  };
  std::string split;
  try {
    split = dumped(attnconv::parse_case_json(text, path, last_to_first, {1, 2}));
  } catch (const attnconv::InputError& e) {
    split = std::string("refused: ") + e.what();
  }
  if (split != whole) __builtin_trap();
  if (!report) return 0;
  const attnconv::json& parsed = *report;
  try {
    attnconv::validate_report(parsed, path);
    (void)dumped(attnconv::fit_sweeps(parsed["cases"]));
    if (parsed.contains("shard")) (void)dumped(attnconv::merge_reports({{path, parsed}}));
  } catch (const attnconv::InputError&) {
  }
  return 0;
}
