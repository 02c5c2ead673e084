#include "io/npz.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

#include "io/npy_check.hpp"
#include "io/quote.hpp"
#include "io/sizes.hpp"

namespace attnconv {

namespace fs = std::filesystem;

namespace {

// An entry of more than this is not a layer's tensor (2 GiB of float64 is 268
// million values); an archive may hold many of them.
constexpr std::size_t max_entries = 1 << 20;
constexpr std::uint64_t max_directory_bytes = std::uint64_t(256) << 20;
constexpr std::size_t end_record_size = 22;
constexpr std::size_t max_comment = 0xFFFF;

std::runtime_error corrupt(const std::string& what) { return std::runtime_error("is not a readable .npz (zip) archive: " + what); }

std::uint64_t little_endian(const unsigned char* p, int bytes) {
  std::uint64_t value = 0;
  for (int k = bytes - 1; k >= 0; --k) value = value * 256 + p[k];
  return value;
}

std::string read_at(std::ifstream& stream, std::uint64_t offset, std::uint64_t size, std::uint64_t file_size,
                    const std::string& what) {
  if (offset > file_size || size > file_size - offset) throw corrupt(what + " lies beyond the end of the file (truncated?)");
  std::string bytes(std::size_t(size), '\0');
  stream.seekg(std::streamoff(offset));
  if (!stream.read(bytes.data(), std::streamsize(size))) throw corrupt("cannot read " + what);
  return bytes;
}

// The zip64 extra field (header 0x0001) replaces the 32-bit fields set to
// 0xFFFFFFFF, in the order size, compressed size, local header offset.
void apply_zip64(NpzEntry& e, const unsigned char* extra, std::size_t length, bool size32, bool csize32, bool offset32) {
  for (std::size_t at = 0; at + 4 <= length;) {
    const auto id = little_endian(extra + at, 2), n = little_endian(extra + at + 2, 2);
    if (at + 4 + n > length) throw corrupt("an extra field of entry '" + clip(e.name) + "' overruns its header");
    if (id == 1) {
      std::size_t k = at + 4;
      const auto take = [&](std::uint64_t& field) {
        if (k + 8 > at + 4 + n) throw corrupt("the zip64 field of entry '" + clip(e.name) + "' is too short");
        field = little_endian(extra + k, 8);
        k += 8;
      };
      if (size32) take(e.size);
      if (csize32) take(e.compressed_size);
      if (offset32) take(e.local_header_offset);
      return;
    }
    at += 4 + n;
  }
  if (size32 || csize32 || offset32) throw corrupt("entry '" + clip(e.name) + "' needs a zip64 field it does not have");
}

}  // namespace

std::vector<NpzEntry> read_npz_directory(const std::string& path) {
  std::error_code error;
  const auto status = fs::status(path, error);
  if (error || !fs::exists(status)) throw std::runtime_error("cannot be read: no such file");
  if (!fs::is_regular_file(status)) throw std::runtime_error("is not a regular file");
  const std::uint64_t file_size = fs::file_size(path, error);
  if (error) throw std::runtime_error("cannot be read: " + error.message());
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw std::runtime_error(std::string("cannot be read: ") + std::strerror(errno));
  if (file_size < end_record_size) throw corrupt("shorter than a zip end record (" + std::to_string(file_size) + " bytes)");

  // The end of central directory record: the last "PK\5\6" in the final 64 KiB + 22 bytes.
  const std::uint64_t tail_size = std::min<std::uint64_t>(file_size, end_record_size + max_comment);
  const std::string tail = read_at(stream, file_size - tail_size, tail_size, file_size, "the end record");
  std::size_t end = std::string::npos;
  for (std::size_t k = tail.size() - end_record_size + 1; k-- > 0;)
    if (tail.compare(k, 4, "PK\x05\x06") == 0) {
      end = k;
      break;
    }
  if (end == std::string::npos) throw corrupt("no end of central directory record (truncated, or not a zip file)");
  const auto* record = reinterpret_cast<const unsigned char*>(tail.data() + end);
  if (little_endian(record + 4, 2) != 0 || little_endian(record + 6, 2) != 0)
    throw corrupt("an archive split over several files");
  std::uint64_t count = little_endian(record + 10, 2), directory_size = little_endian(record + 12, 4),
                directory_offset = little_endian(record + 16, 4);
  // Zip64: the locator (20 bytes, "PK\6\7") right before the end record names the zip64 end record.
  // A field at its maximum (0xFFFF, 0xFFFFFFFF) says "see the zip64 record" only when the locator is
  // there: without it the field is a plain value (Python's zipfile writes 65535 entries without zip64).
  const std::uint64_t end_at = file_size - tail_size + end;
  const std::string locator = end_at >= 20 ? read_at(stream, end_at - 20, 20, file_size, "the zip64 locator") : "";
  const bool has_locator = locator.compare(0, 4, "PK\x06\x07") == 0;
  if (has_locator && (count == 0xFFFF || directory_size == 0xFFFFFFFF || directory_offset == 0xFFFFFFFF)) {
    const std::uint64_t at = little_endian(reinterpret_cast<const unsigned char*>(locator.data()) + 8, 8);
    const std::string z64 = read_at(stream, at, 56, file_size, "the zip64 end record");
    if (z64.compare(0, 4, "PK\x06\x06") != 0) throw corrupt("a bad zip64 end record");
    const auto* r = reinterpret_cast<const unsigned char*>(z64.data());
    count = little_endian(r + 32, 8), directory_size = little_endian(r + 40, 8), directory_offset = little_endian(r + 48, 8);
  }
  if (count > max_entries) throw corrupt("more than " + std::to_string(max_entries) + " entries");
  if (directory_size > max_directory_bytes) throw corrupt("a central directory of more than 256 MiB");
  const std::string directory = read_at(stream, directory_offset, directory_size, file_size, "the central directory");
  const auto* d = reinterpret_cast<const unsigned char*>(directory.data());

  std::vector<NpzEntry> entries;
  std::set<std::string> names;
  for (std::size_t at = 0, k = 0; k < count; ++k) {
    if (at + 46 > directory.size() || directory.compare(at, 4, "PK\x01\x02") != 0)
      throw corrupt("the central directory is shorter than its " + std::to_string(count) + " entries");
    const std::size_t name_length = little_endian(d + at + 28, 2), extra_length = little_endian(d + at + 30, 2),
                      comment_length = little_endian(d + at + 32, 2);
    if (at + 46 + name_length + extra_length + comment_length > directory.size())
      throw corrupt("entry " + std::to_string(k + 1) + " overruns the central directory");
    NpzEntry e;
    std::string file_name = directory.substr(at + 46, name_length);
    if (file_name.size() < 4 || file_name.compare(file_name.size() - 4, 4, ".npy") != 0)
      throw corrupt("entry '" + clip(file_name) + "' is not an .npy file (numpy.savez writes only <name>.npy entries)");
    e.name = file_name.substr(0, file_name.size() - 4);
    if (little_endian(d + at + 8, 2) & 1) throw std::runtime_error("holds entry '" + clip(e.name) + "' encrypted");
    e.method = std::uint16_t(little_endian(d + at + 10, 2));
    e.crc32 = std::uint32_t(little_endian(d + at + 16, 4));
    e.compressed_size = little_endian(d + at + 20, 4);
    e.size = little_endian(d + at + 24, 4);
    e.local_header_offset = little_endian(d + at + 42, 4);
    apply_zip64(e, d + at + 46 + name_length, extra_length, e.size == 0xFFFFFFFF, e.compressed_size == 0xFFFFFFFF,
                e.local_header_offset == 0xFFFFFFFF);
    if (e.method != 0 && e.method != 8)
      throw std::runtime_error("holds entry '" + clip(e.name) + "' compressed with zip method " + std::to_string(e.method) +
                               "; only stored (numpy.savez) and deflated (numpy.savez_compressed) entries are read");
    if (e.size > npz_max_entry_bytes || e.compressed_size > npz_max_entry_bytes)
      throw std::runtime_error("holds entry '" + clip(e.name) + "' of more than 2 GiB");
    // Deflate expands at most 1032:1 (zlib's technical details): a larger claim is corrupt, and is not allocated.
    if (e.method == 8 && e.size > e.compressed_size * 1032 + 1024)
      throw corrupt("entry '" + clip(e.name) + "' claims " + std::to_string(e.size) + " bytes from " +
                    std::to_string(e.compressed_size) + " deflated, more than deflate can expand to");
    if (!names.insert(e.name).second) throw corrupt("entry '" + clip(e.name) + "' appears twice");
    entries.push_back(std::move(e));
    at += 46 + name_length + extra_length + comment_length;
  }
  return entries;
}

namespace {

// The bytes an .npy of this header holds: the header, then the shape's
// values; SIZE_MAX when the shape overflows.
std::uint64_t npy_bytes(const NpyHeader& header) {
  std::uint64_t item = header.float_size;
  if (item == 0) {  // another dtype ("<i8", "|b1", "<c16"): its width is the number at its end (the dtype check refuses it)
    item = 0;
    for (const char ch : header.descr)
      item = ch >= '0' && ch <= '9' ? std::min<std::uint64_t>(item * 10 + std::uint64_t(ch - '0'), 1 << 20) : 0;
    item = std::max<std::uint64_t>(item, 1);
  }
  std::uint64_t bytes = item;
  for (const auto n : header.shape) {
    if (n != 0 && bytes > (std::uint64_t(1) << 62) / n) return SIZE_MAX;
    bytes *= n;
  }
  return header.data_offset + bytes;
}

// An entry's size against the one its .npy header gives, from the first bytes of the entry: an entry
// holding more than its header and its shape's values is refused before the rest is inflated.
// A header that cannot be read is left to the .npy check, which says what is wrong with it.
void check_entry_size(const std::string& what, std::uint64_t size, const char* prefix, std::size_t length) {
  NpyHeader header;
  try {
    std::istringstream stream(std::string(prefix, length));
    header = read_npy_header(stream);
  } catch (const std::exception&) {
    return;
  }
  const std::uint64_t needed = npy_bytes(header);
  if (size > needed)
    throw std::runtime_error("holds " + what + " of " + std::to_string(size) + " bytes, more data than its shape " +
                             shape_string(header.shape) + " of '" + clip(header.descr) + "' needs (" +
                             std::to_string(needed) + " bytes with its header): refused before inflating it");
}

}  // namespace

std::string read_npz_entry(const std::string& path, const NpzEntry& entry, std::uint64_t max_bytes,
                           const std::string& limit_name, Crc check) {
  const std::string what = "entry '" + clip(entry.name) + "'";
  // What reading it takes: the inflated bytes, and the deflated ones while they inflate.
  const std::uint64_t footprint = entry.size + (entry.method == 8 ? entry.compressed_size : 0);
  if (footprint > max_bytes)
    throw std::runtime_error("holds " + what + " of " + format_bytes(double(entry.size)) + (entry.method == 8 ? " inflated" : "") +
                             ", more than " + (limit_name.empty() ? format_bytes(double(max_bytes)) : limit_name) +
                             " allows: refused before reading it");
  std::error_code error;
  const std::uint64_t file_size = fs::file_size(path, error);
  if (error) throw std::runtime_error("cannot be read: " + error.message());
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw std::runtime_error(std::string("cannot be read: ") + std::strerror(errno));
  const std::string local = read_at(stream, entry.local_header_offset, 30, file_size, "the local header of " + what);
  if (local.compare(0, 4, "PK\x03\x04") != 0) throw corrupt("no local header where the directory puts " + what);
  const auto* l = reinterpret_cast<const unsigned char*>(local.data());
  const std::uint64_t data_at = entry.local_header_offset + 30 + little_endian(l + 26, 2) + little_endian(l + 28, 2);
  if (entry.method == 0 && entry.compressed_size != entry.size) throw corrupt(what + " is stored with two different sizes");
  std::string data = read_at(stream, data_at, entry.compressed_size, file_size, "the data of " + what);
  // The .npy header is in the first bytes: magic, version, length, at most 10000 bytes of dict.
  constexpr std::size_t header_window = 8 + 4 + 10000;
  std::string bytes;
  if (entry.method == 0) {
    check_entry_size(what, entry.size, data.data(), std::min<std::size_t>(data.size(), header_window));
    bytes = std::move(data);
  } else {
    // Inflates to at most the claimed size, which the header's shape bounds: the first 64 KiB are
    // checked against the header before more is inflated; the output then grows by doubling, so a
    // claim the data does not back allocates at most twice what it inflates to.
    bytes.assign(std::size_t(std::min<std::uint64_t>(entry.size, std::uint64_t(64) << 10)), '\0');
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw std::runtime_error("cannot start zlib to inflate " + what);
    z.next_in = reinterpret_cast<Bytef*>(data.data());
    std::uint64_t in_left = data.size(), out_done = 0;
    bool header_checked = false;
    int result = Z_OK;
    try {
      while (result == Z_OK) {
        if (!header_checked && out_done >= std::min<std::uint64_t>(entry.size, header_window)) {
          check_entry_size(what, entry.size, bytes.data(), std::size_t(out_done));
          header_checked = true;
        }
        if (out_done == bytes.size() && bytes.size() < entry.size)
          bytes.resize(std::size_t(std::min<std::uint64_t>(entry.size, 2 * std::uint64_t(bytes.size()))), '\0');
        const auto in_chunk = uInt(std::min<std::uint64_t>(in_left, std::numeric_limits<uInt>::max()));
        const auto out_chunk = uInt(std::min<std::uint64_t>(bytes.size() - out_done, std::numeric_limits<uInt>::max()));
        z.avail_in = in_chunk;
        z.next_out = reinterpret_cast<Bytef*>(bytes.data() + out_done);
        z.avail_out = out_chunk;
        result = inflate(&z, Z_FINISH);
        in_left -= in_chunk - z.avail_in;
        out_done += out_chunk - z.avail_out;
        if (result == Z_BUF_ERROR && out_done < entry.size && (in_left > 0 || z.avail_out == 0)) result = Z_OK;
      }
    } catch (...) {
      inflateEnd(&z);
      throw;
    }
    inflateEnd(&z);
    if (result != Z_STREAM_END && out_done == entry.size)
      throw corrupt(what + " inflates to more than its " + std::to_string(entry.size) + " bytes (corrupt or forged data)");
    if (result != Z_STREAM_END || out_done != entry.size)
      throw corrupt(what + " does not inflate to its " + std::to_string(entry.size) + " bytes (corrupt data)");
  }
  if (check == Crc::by_digest) return bytes;
  uLong crc = crc32(0L, Z_NULL, 0);
  for (std::size_t at = 0; at < bytes.size();) {
    const auto n = uInt(std::min<std::size_t>(bytes.size() - at, std::size_t(1) << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + at), n);
    at += n;
  }
  if (crc != entry.crc32) throw corrupt(what + " fails its CRC-32 check (corrupt data)");
  return bytes;
}

std::vector<std::string> npz_names(const std::vector<NpzEntry>& entries) {
  std::vector<std::string> names;
  for (const auto& e : entries) names.push_back(e.name);
  return names;
}

}  // namespace attnconv
