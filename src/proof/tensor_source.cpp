#include "proof/tensor_source.hpp"

#include <limits.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>

#include "io/npz.hpp"
#include "proof/npz_source.hpp"
#include "proof/params.hpp"
#include "io/quote.hpp"
#include "io/sha256.hpp"

namespace attnconv {

namespace fs = std::filesystem;

namespace {

// The entry named `name` of the .npz at `path`; throws std::runtime_error
// starting with the path.
std::string npz_entry_bytes(const std::string& path, const std::string& name, std::uint64_t max_bytes = npz_max_entry_bytes,
                            const std::string& limit_name = "", std::uint64_t* read_bytes = nullptr,
                            Crc crc = Crc::check) {
  const std::string shown = clip(path, PATH_MAX);
  std::vector<NpzEntry> entries;
  try {
    entries = read_npz_directory(path);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(shown + " " + e.what());
  }
  for (const auto& entry : entries)
    if (entry.name == name) try {
        if (read_bytes) *read_bytes = entry.size + (entry.method == 8 ? entry.compressed_size : 0);
        return read_npz_entry(path, entry, max_bytes, limit_name, crc);
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(shown + " " + e.what());
      }
  const std::string best = closest(name, npz_names(entries));
  throw std::runtime_error(shown + " has no entry '" + clip(name) + "'" +
                           (best.empty() ? "" : " (did you mean '" + clip(best) + "'?)"));
}

std::string entry_label(const std::string& path, const std::string& entry) {
  return clip(path, PATH_MAX) + " entry '" + clip(entry) + "'";
}

}  // namespace

TensorSource tensor_source(const json& value) {
  if (value.is_string()) return {value.get<std::string>(), ""};
  if (value.is_object() && value.contains("file") && value["file"].is_string() && value.contains("entry") &&
      value["entry"].is_string())
    return {value["file"].get<std::string>(), value["entry"].get<std::string>()};
  throw std::runtime_error("a tensor source is an .npy path or {\"file\": <.npz path>, \"entry\": <name>}, got " +
                           quote(value));
}

json to_json(const TensorSource& source) {
  if (source.entry.empty()) return source.file;
  return {{"file", source.file}, {"entry", source.entry}};
}

std::string source_path(const std::string& case_file, const TensorSource& source) {
  return (fs::path(case_file).parent_path() / source.file).string();
}

FileDigest cached_file_digest(const std::string& path) {
  // Keyed by the file's identity as stat gives it: a file rewritten meanwhile is hashed again.
  std::error_code error;
  const auto size = fs::file_size(path, error);
  const auto time = fs::last_write_time(path, error).time_since_epoch().count();
  const std::string key = fs::weakly_canonical(fs::absolute(path), error).string() + "|" + std::to_string(size) + "|" +
                          std::to_string(time);
  static std::mutex mutex;
  static std::map<std::string, std::shared_future<FileDigest>> digests;
  std::promise<FileDigest> made;
  std::shared_future<FileDigest> digest;
  bool mine = false;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    const auto found = digests.find(key);
    mine = found == digests.end();
    digest = mine ? digests.emplace(key, made.get_future().share()).first->second : found->second;
  }
  if (mine) try {  // hashed outside the lock: another file's digest may be asked for meanwhile
      made.set_value(file_digest(path));
    } catch (...) {
      made.set_exception(std::current_exception());
    }
  return digest.get();
}

DigestsAhead::DigestsAhead(std::vector<std::string> paths) {
  if (paths.empty()) return;  // no thread for nothing to hash
  worker_ = std::thread([this, paths = std::move(paths)] {
    for (const auto& path : paths) {
      if (stop_) return;
      try {
        cached_file_digest(path);
      } catch (const std::exception&) {
        // met again, and reported, by the caller's cached_file_digest
      }
    }
  });
}

DigestsAhead::~DigestsAhead() {
  stop_ = true;
  if (worker_.joinable()) worker_.join();
}

FileDigest file_digest(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw std::runtime_error("cannot read " + clip(path, PATH_MAX));
  Sha256 hash;
  std::vector<char> buffer(hash_read_bytes);
  FileDigest digest;
  while (stream) {
    stream.read(buffer.data(), std::streamsize(buffer.size()));
    const auto n = std::size_t(stream.gcount());
    hash.update(buffer.data(), n);
    digest.bytes += n;
  }
  if (!stream.eof()) throw std::runtime_error("cannot read " + clip(path, PATH_MAX));
  digest.sha256 = hash.hex_digest();
  return digest;
}

SourceCheck check_tensor_source(const std::string& case_file, const TensorSource& source, const std::string& descr,
                                const std::optional<std::vector<std::size_t>>& shape) {
  std::uint64_t read_bytes = 0;
  return check_tensor_source_within(case_file, source, descr, shape, npz_max_entry_bytes, "", read_bytes);
}

SourceCheck check_tensor_source_within(const std::string& case_file, const TensorSource& source, const std::string& descr,
                                       const std::optional<std::vector<std::size_t>>& shape, std::uint64_t max_bytes,
                                       const std::string& limit_name, std::uint64_t& read_bytes) {
  read_bytes = 0;
  const std::string path = source_path(case_file, source);
  if (source.entry.empty()) {
    const NpyCheck check = check_npy_file(path, descr, shape);
    return {check.problem, check.digest, "", check.shape};
  }
  SourceCheck out;
  try {
    const std::string bytes = npz_entry_bytes(path, source.entry, max_bytes, limit_name, &read_bytes);
    const NpyCheck check = check_npy_bytes(bytes, entry_label(path, source.entry), descr, shape);
    out.problem = check.problem;
    out.shape = check.shape;
    out.entry_sha256 = check.digest.sha256;
  } catch (const std::runtime_error& e) {
    out.problem = e.what();
  }
  return out;
}

template <class T>
NpyTensor<T> read_tensor_source(const std::string& case_file, const TensorSource& source,
                                const std::optional<std::vector<std::size_t>>& shape, Crc crc) {
  const std::string path = source_path(case_file, source);
  if (source.entry.empty()) return read_npy_file<T>(path, shape);
  return read_npy_bytes<T>(npz_entry_bytes(path, source.entry, npz_max_entry_bytes, "", nullptr, crc),
                           entry_label(path, source.entry), shape);
}

template NpyTensor<float> read_tensor_source(const std::string&, const TensorSource&,
                                             const std::optional<std::vector<std::size_t>>&, Crc);
template NpyTensor<double> read_tensor_source(const std::string&, const TensorSource&,
                                              const std::optional<std::vector<std::size_t>>&, Crc);

}  // namespace attnconv
