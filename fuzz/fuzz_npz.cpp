// libFuzzer target: any bytes as an .npz file, through the .npz reader
// (io/npz): its directory, then every entry (inflated, CRC-checked) read
// as an .npy by the reader the loader uses, and again within a small memory
// budget (the inflater's size limits: refused unread over the budget, never
// more than the header's shape inflated). Either may refuse the file with a
// std::runtime_error; a crash, a hang or a sanitizer report is a bug.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
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
        // An entry read holds no more than its header and its shape's values.
        std::istringstream header_stream(bytes);
        const attnconv::NpyHeader header = attnconv::read_npy_header(header_stream);
        std::uint64_t values = 1;
        for (const auto n : header.shape) values = n == 0 || values <= (std::uint64_t(1) << 62) / n ? values * n : UINT64_MAX;
        if (header.float_size && values != UINT64_MAX && bytes.size() > header.data_offset + values * header.float_size) std::abort();
      } catch (const std::runtime_error&) {
      }
      // The size limits (--max-memory): an entry over the budget is refused, one within it is read whole.
      const std::uint64_t budget = size % 4096;
      try {
        const std::string bytes = attnconv::read_npz_entry(path, entry, budget, "the fuzz budget");
        if (bytes.size() > budget || bytes.size() != entry.size) std::abort();
      } catch (const std::runtime_error& e) {
        const std::uint64_t footprint = entry.size + (entry.method == 8 ? entry.compressed_size : 0);
        if (footprint > budget && std::string(e.what()).find("the fuzz budget") == std::string::npos) std::abort();
      }
    }
  } catch (const std::runtime_error&) {
  }
  return 0;
}
