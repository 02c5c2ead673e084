// libFuzzer target: any bytes read as a report, the way merge and plot read
// one (strict JSON, then report/report_validation), and, when valid, what
// they compute from it (the sweep fits, a one-shard merge) must either work
// or be refused with InputError; the parse split into blocks of a long array
// gives the same DOM or the same message as the whole text's. Any other
// exception, a crash, a difference or a sanitizer report is a bug.
#include <cstdint>
#include <functional>
#include <string>

#include "io/errors.hpp"
#include "io/json_reader.hpp"
#include "report/merge.hpp"
#include "report/report_validation.hpp"
#include "report/sweep_fit.hpp"

namespace {

// parse_case_json's result, or its message.
std::string parsed(const std::function<attnconv::json()>& parse) {
  try {
    return parse().dump(-1, ' ', false, attnconv::json::error_handler_t::replace);
  } catch (const attnconv::InputError& e) {
    return std::string("refused: ") + e.what();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The parse split at the longest array under a key of the top-level object
  // (here of two items or more, in blocks of two, run last to first) gives the
  // whole text's DOM or its message.
  const auto in_order = [](std::size_t n, const std::function<void(std::size_t)>& work) {
    for (std::size_t b = n; b-- > 0;) work(b);
  };
  if (parsed([&] { return attnconv::parse_case_json(text, "fuzz-report.json"); }) !=
      parsed([&] { return attnconv::parse_case_json(text, "fuzz-report.json", in_order, {1, 2}); }))
    __builtin_trap();
  try {
    const attnconv::json report = attnconv::parse_case_json(text, "fuzz-report.json");
    attnconv::validate_report(report, "fuzz-report.json");
    (void)attnconv::fit_sweeps(report["cases"]).dump(-1, ' ', false, attnconv::json::error_handler_t::replace);
    if (report.contains("shard"))
      (void)attnconv::merge_reports({{"fuzz-report.json", report}}).dump(-1, ' ', false,
                                                                         attnconv::json::error_handler_t::replace);
  } catch (const attnconv::InputError&) {
  }
  return 0;
}
