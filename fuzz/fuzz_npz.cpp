// libFuzzer target: any bytes as an .npz file, through the .npz reader
// (io/npz): its directory, then every entry (inflated, CRC-checked) read
// as an .npy by the reader the loader uses. Either may refuse the file with a
// std::runtime_error; a crash, a hang or a sanitizer report is a bug.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "io/npy_check.hpp"
#include "io/npz.hpp"
#include "scratch_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const attnconv::fuzz::ScratchFile scratch("npz");
  scratch.write(data, size);
  const std::string& path = scratch.path;
  try {
    for (const auto& entry : attnconv::read_npz_directory(path)) {
      try {
        const std::string bytes = attnconv::read_npz_entry(path, entry);
        const attnconv::NpyCheck check = attnconv::check_npy_bytes(bytes, entry.name, "<f8", std::nullopt);
        if (bytes.size() != entry.size) std::abort();
        if (check.problem.empty() && check.digest.bytes != bytes.size()) std::abort();
      } catch (const std::runtime_error&) {
      }
    }
  } catch (const std::runtime_error&) {
  }
  return 0;
}
