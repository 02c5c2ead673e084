#include "io/npy_check.hpp"

#include <limits.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <xtensor/xadapt.hpp>
#include <xtensor/xmanipulation.hpp>

#include "io/quote.hpp"
#include "io/sha256.hpp"

namespace attnconv {

namespace fs = std::filesystem;

namespace {

// numpy/lib/format.py, _MAX_HEADER_SIZE: numpy.load refuses longer headers.
constexpr std::size_t max_header_length = 10000;
constexpr bool host_is_little_endian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

std::runtime_error header_error(const std::string& what) { return std::runtime_error("has a malformed header: " + what); }

// A Python dict literal of the header, as ast.literal_eval reads the subset
// numpy writes: string keys; string, True/False and tuple-of-int values.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, bool python2_longs) : text_(text), python2_longs_(python2_longs) {}

  NpyHeader parse() {
    NpyHeader out;
    std::map<std::string, bool> seen;
    skip_space();
    expect('{', "the header must be a dict literal '{...}'");
    skip_space();
    while (peek() != '}') {
      const std::string key = string_literal("a quoted key");
      seen[key] = true;  // a key given twice: the last one counts, as in the Python dict numpy.load reads
      skip_space();
      expect(':', "':' after '" + key + "'");
      skip_space();
      if (key == "descr") {
        if (peek() == '[') throw header_error("descr is a structured dtype (a list); only float arrays can be read");
        out.descr = string_literal("descr as a quoted dtype string");
      } else if (key == "fortran_order") {
        out.fortran_order = boolean("fortran_order as True or False");
      } else if (key == "shape") {
        out.shape = shape_tuple();
      } else {
        throw header_error("unknown key '" + clip(key) + "' (numpy.load needs exactly 'descr', 'fortran_order', 'shape')");
      }
      skip_space();
      if (peek() == ',') {
        ++at_;
        skip_space();
      } else if (peek() != '}') {
        throw header_error("expected ',' or '}' at byte " + std::to_string(at_) + ", found " + found());
      }
    }
    ++at_;
    skip_space();
    if (at_ != text_.size()) throw header_error("unexpected " + found() + " after the dict at byte " + std::to_string(at_));
    for (const char* key : {"descr", "fortran_order", "shape"})
      if (!seen.count(key)) throw header_error("no '" + std::string(key) + "' key");
    return out;
  }

 private:
  char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }

  std::string found() const {
    if (at_ >= text_.size()) return "the end of the header";
    const unsigned char ch = static_cast<unsigned char>(text_[at_]);
    if (ch >= 0x20 && ch < 0x7f) return std::string("'") + char(ch) + "'";
    char code[16];
    std::snprintf(code, sizeof code, "byte 0x%02x", ch);
    return code;
  }

  void expect(char ch, const std::string& what) {
    if (peek() != ch) throw header_error("expected " + what + " at byte " + std::to_string(at_) + ", found " + found());
    ++at_;
  }

  // Python's whitespace inside brackets (ast.literal_eval also strips leading blanks).
  void skip_space() {
    while (at_ < text_.size() && std::strchr(" \t\n\r\f", text_[at_]) && text_[at_] != '\0') ++at_;
  }

  std::string string_literal(const std::string& what) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') expect('\'', what);
    const std::size_t start = ++at_;
    while (at_ < text_.size() && text_[at_] != quote) {
      if (text_[at_] == '\\' || text_[at_] == '\n' || static_cast<unsigned char>(text_[at_]) < 0x20)
        throw header_error("unsupported character in a string at byte " + std::to_string(at_));
      ++at_;
    }
    if (at_ >= text_.size()) throw header_error("unterminated string starting at byte " + std::to_string(start - 1));
    return text_.substr(start, at_++ - start);
  }

  bool boolean(const std::string& what) {
    for (const auto& [word, value] : {std::pair<std::string, bool>{"True", true}, {"False", false}}) {
      const std::size_t end = at_ + word.size();
      const bool name_goes_on = end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_');
      if (text_.compare(at_, word.size(), word) == 0 && !name_goes_on) {
        at_ = end;
        return value;
      }
    }
    throw header_error("expected " + what + " at byte " + std::to_string(at_) + ", found " + found());
  }

  // A Python tuple of non-negative ints: (), (n,), (a, b), (a, b,).
  std::vector<std::size_t> shape_tuple() {
    expect('(', "shape as a tuple '(...)'");
    std::vector<std::size_t> shape;
    bool comma = true;
    for (skip_space(); peek() != ')'; skip_space()) {
      if (!comma) throw header_error("expected ',' or ')' in the shape at byte " + std::to_string(at_) + ", found " + found());
      shape.push_back(integer());
      if (shape.size() > 32) throw header_error("the shape has more than 32 dimensions");
      skip_space();
      comma = peek() == ',';
      if (comma) ++at_;
    }
    ++at_;
    if (shape.size() == 1 && !comma) throw header_error("the shape (n) is not a tuple: write (n,)");
    return shape;
  }

  std::size_t integer() {
    if (peek() < '0' || peek() > '9')
      throw header_error("expected a non-negative integer in the shape at byte " + std::to_string(at_) + ", found " + found());
    const std::size_t start = at_;
    std::size_t value = 0;
    for (; peek() >= '0' && peek() <= '9'; ++at_) {
      if (value > (std::size_t(1) << 50)) throw header_error("a dimension of the shape is absurdly large");
      value = value * 10 + std::size_t(peek() - '0');
    }
    if (text_[start] == '0' && at_ - start > 1) throw header_error("a dimension with a leading zero at byte " + std::to_string(start));
    if (python2_longs_ && peek() == 'L') ++at_;  // Python 2's long suffix, which numpy filters out of format 1.0/2.0
    if (std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_' || peek() == '.')
      throw header_error("a dimension of the shape is not an integer at byte " + std::to_string(start));
    return value;
  }

  const std::string& text_;
  const bool python2_longs_;
  std::size_t at_ = 0;
};

// The float width a descr names, whatever its byte order: "<f8" -> 8.
void classify_descr(NpyHeader& header) {
  std::string code = header.descr;
  char order = '=';
  if (!code.empty() && std::strchr("<>|=", code[0])) order = code[0], code.erase(0, 1);
  if (code == "f8" || code == "d" || (order == '=' && code == "float64" && header.descr == code)) header.float_size = 8;
  if (code == "f4" || code == "f" || (order == '=' && code == "float32" && header.descr == code)) header.float_size = 4;
  header.swap_bytes = (order == '<' && !host_is_little_endian) || (order == '>' && host_is_little_endian);
}

std::size_t element_count(const std::vector<std::size_t>& shape) {
  std::size_t count = 1;
  for (const auto n : shape) {
    if (n != 0 && count > (std::size_t(1) << 58) / n) return SIZE_MAX;
    count *= n;
  }
  return count;
}

// C-order flat index of the element at Fortran-order flat index `f`.
std::size_t c_index_of_fortran(std::size_t f, const std::vector<std::size_t>& shape) {
  std::vector<std::size_t> index(shape.size());
  for (std::size_t k = 0; k < shape.size(); ++k) index[k] = f % shape[k], f /= shape[k];
  std::size_t c = 0;
  for (std::size_t k = 0; k < shape.size(); ++k) c = c * shape[k] + index[k];
  return c;
}

// An istream over `bytes` in place (std::istringstream would copy them: an
// .npz entry's size once more).
class BytesBuf : public std::streambuf {
 public:
  explicit BytesBuf(const std::string& bytes) {
    char* begin = const_cast<char*>(bytes.data());
    setg(begin, begin, begin + bytes.size());
  }

 protected:
  pos_type seekpos(pos_type pos, std::ios_base::openmode) override {
    if (off_type(pos) < 0 || off_type(pos) > egptr() - eback()) return pos_type(off_type(-1));
    setg(eback(), eback() + off_type(pos), egptr());
    return pos;
  }
  pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode which) override {
    const off_type base = dir == std::ios_base::beg ? 0 : dir == std::ios_base::cur ? gptr() - eback() : egptr() - eback();
    return seekpos(pos_type(base + off), which);
  }
};

struct Scan {
  std::string problem;
  NpyHeader header;
  FileDigest digest;
};

// Reads the .npy in `stream` (of `size` bytes, named `shown` in messages)
// through: every check of check_npy_file, the SHA-256 of all its bytes, and
// each value (converted to this machine's byte order) given to
// sink(file-order index, value).
template <class T, class Sink>
Scan scan_npy_stream(std::istream& stream, std::uintmax_t size, const std::string& shown,
                     const std::optional<std::vector<std::size_t>>& shape, Sink&& sink) {
  Scan scan;
  const auto fail = [&](const std::string& problem) {
    scan.problem = problem;
    return scan;
  };
  const std::string descr = sizeof(T) == 4 ? "<f4" : "<f8";
  try {
    scan.header = read_npy_header(stream);
  } catch (const std::exception& e) {
    return fail(shown + " " + e.what());
  }
  const NpyHeader& header = scan.header;
  if (header.float_size != sizeof(T))
    return fail(shown + " holds dtype '" + clip(header.descr) + "', expected '" + descr + "' (or another byte order of it)");
  if (shape && header.shape != *shape)
    return fail(shown + " has shape " + shape_string(header.shape) + ", expected " + shape_string(*shape));
  const std::size_t count = element_count(header.shape);
  if (count == SIZE_MAX) return fail(shown + " has an absurd shape " + shape_string(header.shape));
  const std::uintmax_t wanted = header.data_offset + count * sizeof(T);
  if (size < wanted)
    return fail(shown + " is truncated: shape " + shape_string(header.shape) + " of '" + header.descr + "' needs " +
                std::to_string(wanted) + " bytes, the file has " + std::to_string(size));

  Sha256 hash;
  std::vector<char> buffer(std::max(header.data_offset, hash_read_bytes));
  stream.seekg(0);
  if (!stream.read(buffer.data(), std::streamsize(header.data_offset))) return fail(shown + " is truncated");
  hash.update(buffer.data(), header.data_offset);
  for (std::size_t index = 0; index < count;) {
    const std::size_t n = std::min(count - index, buffer.size() / sizeof(T));
    if (!stream.read(buffer.data(), std::streamsize(n * sizeof(T)))) return fail(shown + " is truncated");
    hash.update(buffer.data(), n * sizeof(T));
    for (std::size_t k = 0; k < n; ++k, ++index) {
      char* bytes = buffer.data() + k * sizeof(T);
      if (header.swap_bytes) std::reverse(bytes, bytes + sizeof(T));
      T value;
      std::memcpy(&value, bytes, sizeof(T));
      if (!std::isfinite(value))
        return fail(shown + " holds " + (std::isnan(value) ? "NaN" : "Inf") + " (first at flat index " +
                    std::to_string(header.fortran_order ? c_index_of_fortran(index, header.shape) : index) + ")");
      sink(index, value);
    }
  }
  // Bytes after the data: numpy.load ignores them, and so does the reader;
  // the digest is of the whole file, as it is on disk.
  for (std::uintmax_t left = size - wanted; left > 0;) {
    const std::size_t n = std::size_t(std::min<std::uintmax_t>(left, buffer.size()));
    if (!stream.read(buffer.data(), std::streamsize(n))) return fail(shown + " is truncated");
    hash.update(buffer.data(), n);
    left -= n;
  }
  scan.digest = {size, hash.hex_digest()};
  return scan;
}

// scan_npy_stream of the file at `path`.
template <class T, class Sink>
Scan scan_npy(const std::string& path, const std::optional<std::vector<std::size_t>>& shape, Sink&& sink) {
  Scan scan;
  const std::string shown = clip(path, PATH_MAX);  // escaped; whole, as a case file's weights path is shorter
  const auto fail = [&](const std::string& problem) {
    scan.problem = problem;
    return scan;
  };
  std::error_code error;
  const auto status = fs::status(path, error);
  if (error || !fs::exists(status)) return fail("cannot read " + shown + ": no such file");
  if (!fs::is_regular_file(status)) return fail(shown + " is not a regular file");
  std::ifstream stream(path, std::ios::binary);
  if (!stream) return fail("cannot read " + shown + ": " + std::strerror(errno));
  const std::uintmax_t size = fs::file_size(path, error);
  if (error) return fail("cannot read " + shown + ": " + error.message());
  return scan_npy_stream<T>(stream, size, shown, shape, sink);
}

}  // namespace

std::string shape_string(const std::vector<std::size_t>& shape) {
  std::string s = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

NpyHeader read_npy_header(std::istream& stream) {
  char magic[8];
  if (!stream.read(magic, 8)) {
    if (stream.gcount() >= 6 && std::memcmp(magic, "\x93NUMPY", 6) == 0) throw std::runtime_error("is truncated in its header");
    throw std::runtime_error("is not an .npy file (no \\x93NUMPY magic)");
  }
  if (std::memcmp(magic, "\x93NUMPY", 6) != 0) throw std::runtime_error("is not an .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(magic[6]), minor = static_cast<unsigned char>(magic[7]);
  if (major < 1 || major > 3 || minor != 0)
    throw std::runtime_error("has .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                             ", which numpy.load does not read (only 1.0, 2.0 and 3.0)");
  unsigned char length_bytes[4] = {0, 0, 0, 0};
  const int length_size = major == 1 ? 2 : 4;
  if (!stream.read(reinterpret_cast<char*>(length_bytes), length_size)) throw std::runtime_error("is truncated in its header");
  std::size_t length = 0;
  for (int k = length_size - 1; k >= 0; --k) length = length * 256 + length_bytes[k];
  if (length > max_header_length)
    throw std::runtime_error("has a header of " + std::to_string(length) + " bytes; numpy.load refuses more than " +
                             std::to_string(max_header_length));
  std::string text(length, '\0');
  if (!stream.read(text.data(), std::streamsize(length))) throw std::runtime_error("is truncated in its header");
  NpyHeader out = HeaderParser(text, major <= 2).parse();
  classify_descr(out);
  out.data_offset = std::size_t(8 + length_size) + length;
  return out;
}

NpyCheck check_npy_file(const std::string& path, const std::string& descr,
                        const std::optional<std::vector<std::size_t>>& shape) {
  const auto ignore = [](std::size_t, auto) {};
  const Scan scan = descr == "<f4" ? scan_npy<float>(path, shape, ignore) : scan_npy<double>(path, shape, ignore);
  return {scan.problem, scan.digest, scan.header.shape};
}

NpyCheck check_npy_bytes(const std::string& bytes, const std::string& shown, const std::string& descr,
                         const std::optional<std::vector<std::size_t>>& shape) {
  const auto ignore = [](std::size_t, auto) {};
  BytesBuf buffer(bytes);
  std::istream stream(&buffer);
  const Scan scan = descr == "<f4" ? scan_npy_stream<float>(stream, bytes.size(), shown, shape, ignore)
                                   : scan_npy_stream<double>(stream, bytes.size(), shown, shape, ignore);
  return {scan.problem, scan.digest, scan.header.shape};
}

namespace {

// The tensor of a scan that kept its values, in C order.
template <class T> NpyTensor<T> tensor_of(const Scan& scan, std::vector<T> values) {
  if (!scan.problem.empty()) throw std::runtime_error(scan.problem);
  std::vector<std::size_t> file_shape = scan.header.shape;
  if (!scan.header.fortran_order) return {xt::adapt(std::move(values), file_shape), scan.digest};
  // Fortran order: the data is the C-order array of the reversed shape, transposed.
  std::reverse(file_shape.begin(), file_shape.end());
  const xt::xarray<T> reversed = xt::adapt(std::move(values), file_shape);
  return {xt::transpose(reversed), scan.digest};
}

}  // namespace

template <class T>
NpyTensor<T> read_npy_file(const std::string& path, const std::optional<std::vector<std::size_t>>& shape) {
  std::vector<T> values;
  const Scan scan = scan_npy<T>(path, shape, [&](std::size_t, T value) { values.push_back(value); });
  return tensor_of(scan, std::move(values));
}

template <class T>
NpyTensor<T> read_npy_bytes(const std::string& bytes, const std::string& shown,
                            const std::optional<std::vector<std::size_t>>& shape) {
  std::vector<T> values;
  BytesBuf buffer(bytes);
  std::istream stream(&buffer);
  const Scan scan = scan_npy_stream<T>(stream, bytes.size(), shown, shape, [&](std::size_t, T value) { values.push_back(value); });
  return tensor_of(scan, std::move(values));
}

template NpyTensor<float> read_npy_file(const std::string&, const std::optional<std::vector<std::size_t>>&);
template NpyTensor<double> read_npy_file(const std::string&, const std::optional<std::vector<std::size_t>>&);
template NpyTensor<float> read_npy_bytes(const std::string&, const std::string&, const std::optional<std::vector<std::size_t>>&);
template NpyTensor<double> read_npy_bytes(const std::string&, const std::string&, const std::optional<std::vector<std::size_t>>&);

}  // namespace attnconv
