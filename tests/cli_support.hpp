#pragma once
// Helpers for end-to-end tests of the attnconv program (ATTNCONV_BINARY):
// scratch folders, files, and running the CLI with its exit code and output.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace attnconv::testing {

namespace fs = std::filesystem;

// A fresh folder under the system temp folder, removed at the end of scope.
struct ScratchDir {
  explicit ScratchDir(const std::string& label)
      : path(fs::temp_directory_path() / ("attnconv_" + label + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  fs::path path;
};

inline void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string read_text(const fs::path& path) {
  std::ifstream stream(path, std::ios::binary);
  std::ostringstream text;
  text << stream.rdbuf();
  return text.str();
}

// An .npy file (format 1.0) with the given header fields and raw data bytes.
inline void write_npy(const fs::path& path, const std::string& descr, const std::vector<std::size_t>& shape,
                      const std::string& data) {
  std::string shape_text = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) shape_text += (k ? ", " : "") + std::to_string(shape[k]);
  shape_text += shape.size() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_text + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8);
  file += char(header.size() & 0xff);
  file += char(header.size() >> 8);
  write_text(path, file + header + data);
}

template <class T> std::string raw_bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// A Theorem 1 case that runs in milliseconds: 6x6 image, 3x3 kernel, 9 heads.
inline nlohmann::json small_theorem1_case() {
  return {{"name", "c1"},
          {"proof", "cordonnier2020.theorem1"},
          {"params",
           {{"image", {6, 6}}, {"kernel", 3}, {"in_channels", 2}, {"out_channels", 3}, {"heads", 9}, {"head_dim", 3}, {"padding", 1}}}};
}

struct CliResult {
  int code = -1;       // exit code, or 128 + signal
  std::string output;  // stdout and stderr together
};

// Runs `ATTNCONV_BINARY <args>` through the shell; args are passed as written.
inline CliResult run_cli(const std::string& args) {
  const fs::path log = fs::temp_directory_path() / ("attnconv_cli_" + std::to_string(::getpid()) + ".log");
  const int status = std::system((std::string("'") + ATTNCONV_BINARY + "' " + args + " > '" + log.string() + "' 2>&1").c_str());
  CliResult result;
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.output = read_text(log);
  fs::remove(log);
  return result;
}

// Whether `text` is well-formed UTF-8 (Unicode, Table 3-7), by decoding each
// code point: no stray continuation byte, overlong form, surrogate or value
// above U+10FFFF.
inline bool valid_utf8(const std::string& text) {
  for (std::size_t k = 0; k < text.size();) {
    const auto lead = static_cast<unsigned char>(text[k]);
    const std::size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || k + n > text.size()) return false;
    std::uint32_t code = n == 1 ? lead : lead & (0x7Fu >> n);
    for (std::size_t i = 1; i < n; ++i) {
      const auto next = static_cast<unsigned char>(text[k + i]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3F);
    }
    const std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < least[n] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    k += n;
  }
  return true;
}

inline std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

}  // namespace attnconv::testing
