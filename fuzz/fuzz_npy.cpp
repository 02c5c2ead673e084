// libFuzzer target: any bytes as an .npy file, through the load-time check
// and the loader (io/npy_check), which must agree: both accept it (with
// the same shape and values), or both refuse it with the same message. Any
// other outcome, a crash or a sanitizer report is a bug.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include "io/npy_check.hpp"
#include "scratch_file.hpp"

namespace {

template <class T> void check_agree(const std::string& path, const char* descr) {
  const attnconv::NpyCheck check = attnconv::check_npy_file(path, descr, std::nullopt);
  try {
    const auto tensor = attnconv::read_npy_file<T>(path, std::nullopt);
    if (!check.problem.empty()) std::abort();  // the loader read what the check refused
    if (tensor.digest.sha256 != check.digest.sha256 || tensor.values.size() * sizeof(T) > check.digest.bytes) std::abort();
  } catch (const std::runtime_error& e) {
    if (check.problem != e.what()) std::abort();  // refused for another reason, or only by the loader
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const attnconv::fuzz::ScratchFile scratch("npy");
  scratch.write(data, size);
  const std::string& path = scratch.path;
  check_agree<double>(path, "<f8");
  check_agree<float>(path, "<f4");
  return 0;
}
