// libFuzzer target: any bytes read as a report, the way merge and plot read
// one (strict JSON, then report/report_validation), and, when valid, what
// they compute from it (the sweep fits, a one-shard merge) must either work
// or be refused with InputError. Any other exception, a crash or a sanitizer
// report is a bug.
#include <cstdint>
#include <string>

#include "io/errors.hpp"
#include "io/json_reader.hpp"
#include "report/merge.hpp"
#include "report/report_validation.hpp"
#include "report/sweep_fit.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
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
