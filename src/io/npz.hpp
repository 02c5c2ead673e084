#pragma once
// The .npz reader: the zip archive numpy.savez writes (one `<name>.npy` entry
// per array; PKWARE APPNOTE 6.3.x, sections 4.3 and 4.4). Reads the central
// directory, then one entry at a time, each checked against its CRC-32.
// Entries stored (numpy.savez) or deflated (numpy.savez_compressed, through
// zlib) are read; anything else, an archive split over several files, a
// truncated or corrupt archive, or one larger than its bounds is refused with
// a message saying what is wrong, as a phrase completing "<file> ...".
#include <cstdint>
#include <string>
#include <vector>

namespace attnconv {

struct NpzEntry {
  std::string name;  // as numpy.load names it: the entry's file name without ".npy"
  std::uint16_t method = 0;  // 0 stored, 8 deflated
  std::uint32_t crc32 = 0;
  std::uint64_t compressed_size = 0, size = 0, local_header_offset = 0;
};

// The entries of the archive at `path`, in archive order; throws
// std::runtime_error saying what is wrong.
std::vector<NpzEntry> read_npz_directory(const std::string& path);

// An entry of more than this is not a layer's tensor (2 GiB of float64 is 268
// million values), whatever --max-memory allows.
constexpr std::uint64_t npz_max_entry_bytes = std::uint64_t(2) << 30;

// The bytes of one entry (an .npy file), uncompressed and CRC-checked. Refused
// before anything is read when the entry (with its deflated data) takes more
// than `max_bytes` (`limit_name` says whose limit, e.g. "--max-memory 100 MiB");
// refused after its first bytes when it holds more than its .npy header and
// the header's shape need (no such entry is inflated: numpy.savez writes none,
// and the rest is bytes numpy.load ignores); never inflated beyond its claimed
// size (data that inflates further is corrupt or forged). Crc::by_digest leaves
// out the CRC-32 for a caller that compares the bytes' SHA-256 with a digest of
// bytes that passed it (a case's tensor read again at run time).
enum class Crc { check, by_digest };
std::string read_npz_entry(const std::string& path, const NpzEntry& entry, std::uint64_t max_bytes = npz_max_entry_bytes,
                           const std::string& limit_name = "", Crc crc = Crc::check);

// The names of `entries`.
std::vector<std::string> npz_names(const std::vector<NpzEntry>& entries);

}  // namespace attnconv
