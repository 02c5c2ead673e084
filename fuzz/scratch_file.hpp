#pragma once
// One scratch file per fuzzing process, rewritten for every input, removed at exit.
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

namespace attnconv::fuzz {

struct ScratchFile {
  explicit ScratchFile(const std::string& label) : path("/tmp/attnconv-fuzz-" + label + "-XXXXXX") {
    const int fd = ::mkstemp(path.data());
    if (fd < 0) std::abort();
    ::close(fd);
  }
  ~ScratchFile() { ::unlink(path.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  // The file holds exactly these bytes.
  void write(const std::uint8_t* data, std::size_t size) const {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }

  std::string path;
};

}  // namespace attnconv::fuzz
