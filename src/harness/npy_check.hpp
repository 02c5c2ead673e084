#pragma once
// Checks an .npy file before anything runs, without loading it whole: a
// readable regular file, a valid header (NumPy format 1.0-3.0), the dtype and
// shape a case expects, a size that matches the header, and no NaN/Inf.
#include <istream>
#include <optional>
#include <string>
#include <vector>

namespace attnconv {

struct NpyHeader {
  std::string descr;  // e.g. "<f8"
  bool fortran_order = false;
  std::vector<std::size_t> shape;
  std::size_t data_offset = 0;  // bytes before the data
};

// Parses the header; throws std::runtime_error saying what is wrong with it.
NpyHeader read_npy_header(std::istream& stream);

// "(2, 3)", "(4,)", "()" as NumPy prints shapes.
std::string shape_string(const std::vector<std::size_t>& shape);

// Empty when the file at `path` holds finite values of dtype `descr` ("<f4" or
// "<f8") and, when given, exactly `shape`; else what is wrong, in plain words.
std::string check_npy_file(const std::string& path, const std::string& descr,
                           const std::optional<std::vector<std::size_t>>& shape);

}  // namespace attnconv
