#pragma once
// The one .npy reader of the harness, for the check when loading (before
// anything runs) and for the loader (when a case runs): the same rules, so a
// file that passes the check loads. It reads every file numpy.load reads for
// the float dtypes the proofs use (numpy/lib/format.py): format 1.0, 2.0 and
// 3.0; the header dict with its keys in any order, any padding, with or
// without the trailing newline; fortran_order True (transposed into C order);
// '<', '>', '|', '=' or no byte order. Refused with a message saying what is
// wrong: other versions, a header numpy refuses (missing or unknown keys, a
// shape that is not a tuple of ints, more than numpy's 10000 header bytes), a
// dtype other than the case's, a shape other than the proof's, a truncated
// file, NaN or Inf. As numpy.load does, a key given twice counts with its last
// value and bytes after the data are ignored.
#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>

namespace attnconv {

struct NpyHeader {
  std::string descr;         // as written, e.g. "<f8"
  bool swap_bytes = false;   // the data's byte order is not this machine's
  std::size_t float_size = 0;  // 4 or 8 for a float dtype; 0 for any other dtype
  bool fortran_order = false;
  std::vector<std::size_t> shape;
  std::size_t data_offset = 0;  // bytes before the data
};

// Parses the magic, version and header dict; throws std::runtime_error saying
// what is wrong, as a phrase completing "<file> ...".
NpyHeader read_npy_header(std::istream& stream);

// "(2, 3)", "(4,)", "()" as NumPy prints shapes.
std::string shape_string(const std::vector<std::size_t>& shape);

// Size and SHA-256 of a file read whole (the provenance of a loaded tensor).
struct FileDigest {
  std::uintmax_t bytes = 0;
  std::string sha256;
};

struct NpyCheck {
  std::string problem;  // empty: the file is good
  FileDigest digest;    // of the file as read, when it is good
  std::vector<std::size_t> shape;  // as the header gives it, when the header is readable
};

// Reads the file at `path` through, without keeping its data: it must hold
// finite values of dtype `descr` ("<f4" or "<f8", any byte order) and, when
// given, exactly `shape`. `problem` says what is wrong, in plain words.
NpyCheck check_npy_file(const std::string& path, const std::string& descr,
                        const std::optional<std::vector<std::size_t>>& shape);

// check_npy_file of an .npy held in memory (an .npz entry), named `shown` in messages.
NpyCheck check_npy_bytes(const std::string& bytes, const std::string& shown, const std::string& descr,
                         const std::optional<std::vector<std::size_t>>& shape);

template <class T> struct NpyTensor {
  xt::xarray<T> values;  // in C order
  FileDigest digest;     // of the file as read
};

// The tensor of the file at `path`, under the same rules as check_npy_file
// for T's dtype; throws std::runtime_error with the problem.
template <class T>
NpyTensor<T> read_npy_file(const std::string& path, const std::optional<std::vector<std::size_t>>& shape);

// read_npy_file of an .npy held in memory (an .npz entry).
template <class T>
NpyTensor<T> read_npy_bytes(const std::string& bytes, const std::string& shown,
                            const std::optional<std::vector<std::size_t>>& shape);

}  // namespace attnconv
