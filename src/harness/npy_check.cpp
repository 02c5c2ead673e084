#include "harness/npy_check.hpp"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace attnconv {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t max_header_length = 1 << 20;

// The value of 'key' in the header's Python dict literal, as raw text.
std::string dict_value(const std::string& header, const std::string& key) {
  const std::string quoted = "'" + key + "'";
  const auto at = header.find(quoted);
  if (at == std::string::npos) throw std::runtime_error("its header has no '" + key + "'");
  const auto colon = header.find(':', at + quoted.size());
  if (colon == std::string::npos) throw std::runtime_error("its header is malformed near '" + key + "'");
  std::size_t start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) throw std::runtime_error("its header is malformed near '" + key + "'");
  std::size_t end;
  if (header[start] == '\'') {
    end = header.find('\'', start + 1);
    if (end == std::string::npos) throw std::runtime_error("its header is malformed near '" + key + "'");
    return header.substr(start + 1, end - start - 1);
  }
  if (header[start] == '(') {
    end = header.find(')', start);
    if (end == std::string::npos) throw std::runtime_error("its header is malformed near '" + key + "'");
    return header.substr(start, end - start + 1);
  }
  end = header.find_first_of(",}", start);
  if (end == std::string::npos) throw std::runtime_error("its header is malformed near '" + key + "'");
  return header.substr(start, end - start);
}

std::vector<std::size_t> parse_shape(const std::string& text) {
  std::vector<std::size_t> shape;
  std::size_t k = 1;  // after '('
  while (k < text.size()) {
    while (k < text.size() && (text[k] == ' ' || text[k] == ',')) ++k;
    if (k >= text.size() || text[k] == ')') break;
    if (text[k] < '0' || text[k] > '9') throw std::runtime_error("its header has a malformed shape " + text);
    std::size_t value = 0;
    for (; k < text.size() && text[k] >= '0' && text[k] <= '9'; ++k) {
      if (value > (std::size_t(1) << 50)) throw std::runtime_error("its header has an absurd shape " + text);
      value = value * 10 + std::size_t(text[k] - '0');
    }
    shape.push_back(value);
    if (shape.size() > 32) throw std::runtime_error("its header has more than 32 dimensions");
  }
  return shape;
}

template <class T> std::string first_non_finite(std::istream& stream, std::size_t count) {
  std::vector<char> buffer(std::size_t(1) << 20);
  std::size_t index = 0;
  while (index < count) {
    const std::size_t n = std::min(count - index, buffer.size() / sizeof(T));
    if (!stream.read(buffer.data(), std::streamsize(n * sizeof(T)))) return "is truncated";
    for (std::size_t k = 0; k < n; ++k, ++index) {
      T value;
      std::memcpy(&value, buffer.data() + k * sizeof(T), sizeof(T));
      if (!std::isfinite(value))
        return std::string("holds ") + (std::isnan(value) ? "NaN" : "Inf") + " (first at flat index " +
               std::to_string(index) + ")";
    }
  }
  return "";
}

}  // namespace

std::string shape_string(const std::vector<std::size_t>& shape) {
  std::string s = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

NpyHeader read_npy_header(std::istream& stream) {
  char magic[8];
  if (!stream.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    throw std::runtime_error("is not an .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(magic[6]);
  if (major < 1 || major > 3) throw std::runtime_error("has an unknown .npy format version " + std::to_string(major));
  unsigned char length_bytes[4] = {0, 0, 0, 0};
  const int length_size = major == 1 ? 2 : 4;
  if (!stream.read(reinterpret_cast<char*>(length_bytes), length_size)) throw std::runtime_error("is truncated in its header");
  std::size_t length = 0;
  for (int k = length_size - 1; k >= 0; --k) length = length * 256 + length_bytes[k];
  if (length > max_header_length) throw std::runtime_error("has an implausible header length " + std::to_string(length));
  std::string header(length, '\0');
  if (!stream.read(header.data(), std::streamsize(length))) throw std::runtime_error("is truncated in its header");
  NpyHeader out;
  out.descr = dict_value(header, "descr");
  const std::string fortran = dict_value(header, "fortran_order");
  if (fortran != "True" && fortran != "False") throw std::runtime_error("its header has fortran_order " + fortran);
  out.fortran_order = fortran == "True";
  const std::string shape = dict_value(header, "shape");
  if (shape.empty() || shape.front() != '(') throw std::runtime_error("its header has a malformed shape " + shape);
  out.shape = parse_shape(shape);
  out.data_offset = std::size_t(8 + length_size) + length;
  return out;
}

std::string check_npy_file(const std::string& path, const std::string& descr,
                           const std::optional<std::vector<std::size_t>>& shape) {
  std::error_code error;
  const auto status = fs::status(path, error);
  if (error || !fs::exists(status)) return "cannot read " + path + ": no such file";
  if (!fs::is_regular_file(status)) return path + " is not a regular file";
  std::ifstream stream(path, std::ios::binary);
  if (!stream) return "cannot read " + path + ": " + std::strerror(errno);
  NpyHeader header;
  try {
    header = read_npy_header(stream);
  } catch (const std::exception& e) {
    return path + " " + e.what();
  }
  if (header.descr != descr)
    return path + " holds dtype '" + header.descr + "', expected '" + descr + "'";
  if (header.fortran_order) return path + " is in Fortran order; save it C-contiguous";
  if (shape && header.shape != *shape)
    return path + " has shape " + shape_string(header.shape) + ", expected " + shape_string(*shape);
  const std::size_t item = descr == "<f4" ? 4 : 8;
  std::size_t count = 1;
  for (const auto n : header.shape) {
    if (n != 0 && count > (std::size_t(1) << 58) / n) return path + " has an absurd shape " + shape_string(header.shape);
    count *= n;
  }
  const std::uintmax_t size = fs::file_size(path, error);
  const std::uintmax_t wanted = header.data_offset + count * item;
  if (error) return "cannot read " + path + ": " + error.message();
  if (size < wanted)
    return path + " is truncated: shape " + shape_string(header.shape) + " of '" + descr + "' needs " +
           std::to_string(wanted) + " bytes, the file has " + std::to_string(size);
  if (size > wanted)
    return path + " has " + std::to_string(size - wanted) + " bytes more than its header " + shape_string(header.shape) +
           " says";
  const std::string problem = item == 4 ? first_non_finite<float>(stream, count) : first_non_finite<double>(stream, count);
  return problem.empty() ? "" : path + " " + problem;
}

}  // namespace attnconv
