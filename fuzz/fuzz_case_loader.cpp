// libFuzzer target: any bytes given to the case loader (or, when they start
// with the .npy magic, to the .npy header reader) must either load or be
// refused with InputError (runtime_error for .npy headers). Any other
// exception, a crash or a sanitizer report is a bug.
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>

#include "cases/case_loader.hpp"
#include "io/errors.hpp"
#include "run/journal.hpp"
#include "io/npy_check.hpp"
#include "run/resources.hpp"
#include "run/runner.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (size >= 6 && std::memcmp(data, "\x93NUMPY", 6) == 0) {
    std::istringstream stream(text);
    try {
      (void)attnconv::shape_string(attnconv::read_npy_header(stream).shape);
    } catch (const std::runtime_error&) {
    }
    return 0;
  }
  try {
    // Relative .npy paths resolve under a folder that does not exist.
    for (const auto& c : attnconv::load_case_text(text, "/nonexistent/attnconv-fuzz/case.json")) {
      (void)attnconv::case_memory_estimate(c);
      (void)attnconv::case_fingerprint(c);
      (void)attnconv::case_entry(c).dump(-1, ' ', false, attnconv::json::error_handler_t::replace);
    }
  } catch (const attnconv::InputError&) {
  }
  return 0;
}
