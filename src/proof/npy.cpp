#include "proof/npy.hpp"

#include <limits.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <variant>
#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "io/errors.hpp"
#include "io/npy_check.hpp"
#include "io/npz.hpp"
#include "proof/batch_read.hpp"
#include "proof/tensor_source.hpp"
#include "io/quote.hpp"
#include "io/regular_file.hpp"

namespace attnconv {

namespace fs = std::filesystem;

bool has_case_tensor(const Case& c, const std::string& key) { return c.weights.contains(key); }

void check_tensor_names(const Case& c, const std::vector<std::string>& known) {
  if (!c.weights_file.empty()) return;  // names read from an .npz, not typed: the loader keeps the known ones
  for (const auto& [key, value] : c.weights.items())
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      const std::string best = closest(key, known);
      std::string list;
      for (const auto& name : known) list += (list.empty() ? "" : ", ") + name;
      throw InputError(c.file + ": case '" + clip(c.name) + "': key '" + clip("weights." + key) + "': unknown tensor" +
                       (best.empty() ? "" : " (did you mean '" + best + "'?)") + "; expected one of " + list);
    }
}

struct BatchTensors {
  std::map<std::string, std::variant<xt::xarray<float>, xt::xarray<double>>> read;  // case and key -> (N, ...)
};

namespace {
thread_local BatchTensors* open_batch = nullptr;
}  // namespace

BatchRead::BatchRead() : tensors_(std::make_unique<BatchTensors>()), previous_(open_batch) { open_batch = tensors_.get(); }
BatchRead::~BatchRead() { open_batch = previous_; }
BatchTensors* BatchRead::current() { return open_batch; }

namespace {
thread_local bool widened_float32 = false;
}  // namespace

WidenedFloat32::WidenedFloat32() : previous_(widened_float32) { widened_float32 = true; }
WidenedFloat32::~WidenedFloat32() { widened_float32 = previous_; }
bool WidenedFloat32::active() { return widened_float32; }

namespace {

// The tensors prefetch_case_tensors read for the case about to run, each under
// a key naming the file (path, size, modification time), the entry, the dtype
// and the digest the loader recorded, which the values were checked against.
struct Prefetched {
  std::mutex mutex;
  std::map<std::string, std::variant<xt::xarray<float>, xt::xarray<double>>> tensors;
};

Prefetched& prefetched() {
  static Prefetched cache;
  return cache;
}

// The provenance key of the loader's digest of a source: of the .npy file, or of the .npz entry.
const char* digest_key_of(const TensorSource& source) { return source.entry.empty() ? "sha256" : "entry_sha256"; }

// The key of `key`'s tensor of c (read as float32 or not), or "" without a loaded digest.
std::string prefetch_key(const Case& c, const std::string& key, bool float32, std::string* path_out = nullptr,
                         TensorSource* source_out = nullptr) {
  const TensorSource source = tensor_source(c.weights.at(key));
  const std::string path = source_path(c.file, source);
  const json loaded = c.provenance.value(key, json::object());
  const char* digest_key = digest_key_of(source);
  if (!loaded.contains(digest_key) || !loaded[digest_key].is_string()) return "";
  std::error_code error;
  const auto size = fs::file_size(path, error);
  if (error) return "";
  const auto time = fs::last_write_time(path, error).time_since_epoch().count();
  if (error) return "";
  if (path_out) *path_out = path;
  if (source_out) *source_out = source;
  return path + "|" + std::to_string(size) + "|" + std::to_string(time) + "|" + source.entry + "|" +
         (float32 ? "f4" : "f8") + "|" + loaded[digest_key].get<std::string>();
}

// The tensor of `key` as the file holds it (a batch: every sample), its digest
// checked against the provenance the loader recorded.
template <class T>
xt::xarray<T> read_case_tensor(const Case& c, const std::string& key, const std::vector<std::size_t>& file_shape) {
  const std::string where = c.file + ": case '" + clip(c.name) + "': key '" + clip("weights." + key) + "': ";
  NpyTensor<T> tensor;
  TensorSource source;
  if (!(std::is_same_v<T, double> && WidenedFloat32::active())) try {
      const std::string id = prefetch_key(c, key, std::is_same_v<T, float>);
      Prefetched& cache = prefetched();
      const std::lock_guard<std::mutex> lock(cache.mutex);
      if (const auto found = cache.tensors.find(id); !id.empty() && found != cache.tensors.end() &&
                                                     std::holds_alternative<xt::xarray<T>>(found->second)) {
        const auto& held = std::get<xt::xarray<T>>(found->second);
        if (std::equal(file_shape.begin(), file_shape.end(), held.shape().begin(), held.shape().end())) return held;
      }
    } catch (const std::exception&) {
      // read it below, where a problem is reported
    }
  // The provenance in the report is the file checked when loading: it must be the one read now
  // (its SHA-256 compared below, so an entry's CRC-32, checked when loading, is not computed again).
  const json loaded = c.provenance.value(key, json::object());
  try {
    source = tensor_source(c.weights.at(key));
    const Crc crc = loaded.contains(digest_key_of(source)) ? Crc::by_digest : Crc::check;
    if constexpr (std::is_same_v<T, double>) {
      if (WidenedFloat32::active()) {
        NpyTensor<float> narrow = read_tensor_source<float>(c.file, source, file_shape, crc);
        tensor = {xt::xarray<double>(xt::cast<double>(narrow.values)), narrow.digest};
      } else {
        tensor = read_tensor_source<T>(c.file, source, file_shape, crc);
      }
    } else {
      tensor = read_tensor_source<T>(c.file, source, file_shape, crc);
    }
  } catch (const std::runtime_error& e) {
    throw InputError(where + e.what());
  }
  const char* digest_key = digest_key_of(source);
  if (loaded.contains(digest_key) && loaded[digest_key] != tensor.digest.sha256)
    throw InputError(where + clip(source_path(c.file, source), PATH_MAX) +
                     (source.entry.empty() ? "" : " entry '" + clip(source.entry) + "'") +
                     " changed after the cases were loaded (SHA-256 " + loaded[digest_key].get<std::string>() +
                     " then, " + tensor.digest.sha256 + " now)");
  return std::move(tensor.values);
}

}  // namespace

template <class T>
xt::xarray<T> load_case_tensor(const Case& c, const std::string& key, const std::vector<std::size_t>& shape) {
  const bool batched = c.batch > 0 && is_data_tensor(key);
  if (!batched) return read_case_tensor<T>(c, key, shape);
  std::vector<std::size_t> file_shape = shape;
  file_shape.insert(file_shape.begin(), c.batch);
  BatchTensors* batch = BatchRead::current();
  if (!batch) return xt::xarray<T>(xt::view(read_case_tensor<T>(c, key, file_shape), c.sample));
  // One read of the batch for every sample: the first sample's load reads it whole.
  const std::string id = c.file + "|" + c.name + "|" + key + "|" + json(c.weights.at(key)).dump();
  auto found = batch->read.find(id);
  const auto usable = [&] {
    if (found == batch->read.end() || !std::holds_alternative<xt::xarray<T>>(found->second)) return false;
    const auto& held = std::get<xt::xarray<T>>(found->second).shape();
    return std::equal(file_shape.begin(), file_shape.end(), held.begin(), held.end());
  };
  if (!usable()) found = batch->read.insert_or_assign(id, read_case_tensor<T>(c, key, file_shape)).first;
  return xt::xarray<T>(xt::view(std::get<xt::xarray<T>>(found->second), c.sample));
}

void prefetch_case_tensors(const Case& c, std::uint64_t max_bytes) {
  Prefetched& cache = prefetched();
  const std::lock_guard<std::mutex> lock(cache.mutex);
  std::map<std::string, std::variant<xt::xarray<float>, xt::xarray<double>>> next;
  try {
    const bool float32 = c.params.value("dtype", std::string("float64")) == "float32";
    std::uint64_t total = 0;
    for (const auto& [key, value] : c.weights.items()) {
      std::string path;
      TensorSource source;
      const std::string id = prefetch_key(c, key, float32, &path, &source);
      if (id.empty()) continue;
      if (const auto found = cache.tensors.find(id); found != cache.tensors.end()) {
        next.insert(cache.tensors.extract(found));
        continue;
      }
      // What the values take, from the entry's (or file's) size: refused before reading past the bound.
      std::uint64_t bytes = 0;
      if (source.entry.empty()) {
        bytes = fs::file_size(path);
      } else {
        for (const auto& entry : read_npz_directory(path))
          if (entry.name == source.entry) bytes = entry.size;
      }
      if (bytes == 0 || (total += bytes) > max_bytes) break;
      const std::string digest = c.provenance[key][digest_key_of(source)].get<std::string>();
      if (float32) {  // kept only when its SHA-256 is the loader's: so no CRC-32 again
        NpyTensor<float> t = read_tensor_source<float>(c.file, source, std::nullopt, Crc::by_digest);
        if (t.digest.sha256 == digest) next.emplace(id, std::move(t.values));
      } else {
        NpyTensor<double> t = read_tensor_source<double>(c.file, source, std::nullopt, Crc::by_digest);
        if (t.digest.sha256 == digest) next.emplace(id, std::move(t.values));
      }
    }
  } catch (const std::exception&) {
    // the case reads it itself and reports the problem
  }
  cache.tensors = std::move(next);
}

template <class T>
xt::xarray<T> load_case_batch(const Case& c, const std::string& key, const std::vector<std::size_t>& sample_shape) {
  Case whole = c;
  whole.batch = 0;  // read the file as it is: (N, ...) for a batch
  std::vector<std::size_t> shape = sample_shape;
  shape.insert(shape.begin(), std::max<std::size_t>(c.batch, 1));
  if (c.batch > 0) return load_case_tensor<T>(whole, key, shape);
  xt::xarray<T> one = load_case_tensor<T>(whole, key, sample_shape);
  one.reshape(shape);
  return one;
}

void dump_tensors(const std::string& dir, const std::vector<NamedTensor>& tensors) {
  fs::create_directories(dir);
  for (const auto& tensor : tensors)
    // In place, as a regular file only: a link, FIFO or device put in the folder is refused, not written through.
    std::visit([&](const auto& data) { write_regular_file((fs::path(dir) / (tensor.name + ".npy")).string(), xt::dump_npy(data)); },
               tensor.data);
}

template xt::xarray<float> load_case_batch(const Case&, const std::string&, const std::vector<std::size_t>&);
template xt::xarray<double> load_case_batch(const Case&, const std::string&, const std::vector<std::size_t>&);
template xt::xarray<float> load_case_tensor(const Case&, const std::string&, const std::vector<std::size_t>&);
template xt::xarray<double> load_case_tensor(const Case&, const std::string&, const std::vector<std::size_t>&);

}  // namespace attnconv
