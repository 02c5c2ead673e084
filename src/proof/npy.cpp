#include "proof/npy.hpp"

#include <limits.h>

#include <algorithm>
#include <filesystem>
#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "io/errors.hpp"
#include "io/npy_check.hpp"
#include "proof/tensor_source.hpp"
#include "io/quote.hpp"

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

template <class T>
xt::xarray<T> load_case_tensor(const Case& c, const std::string& key, const std::vector<std::size_t>& shape) {
  const std::string where = c.file + ": case '" + clip(c.name) + "': key '" + clip("weights." + key) + "': ";
  const bool batched = c.batch > 0 && is_data_tensor(key);
  std::vector<std::size_t> file_shape = shape;
  if (batched) file_shape.insert(file_shape.begin(), c.batch);
  NpyTensor<T> tensor;
  TensorSource source;
  try {
    source = tensor_source(c.weights.at(key));
    tensor = read_tensor_source<T>(c.file, source, file_shape);
  } catch (const std::runtime_error& e) {
    throw InputError(where + e.what());
  }
  // The provenance in the report is the file checked when loading: it must be the one read now.
  const json loaded = c.provenance.value(key, json::object());
  const char* digest_key = source.entry.empty() ? "sha256" : "entry_sha256";
  if (loaded.contains(digest_key) && loaded[digest_key] != tensor.digest.sha256)
    throw InputError(where + clip(source_path(c.file, source), PATH_MAX) +
                     (source.entry.empty() ? "" : " entry '" + clip(source.entry) + "'") +
                     " changed after the cases were loaded (SHA-256 " + loaded[digest_key].get<std::string>() +
                     " then, " + tensor.digest.sha256 + " now)");
  if (!batched) return std::move(tensor.values);
  return xt::xarray<T>(xt::view(tensor.values, c.sample));
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
    std::visit([&](const auto& data) { xt::dump_npy((fs::path(dir) / (tensor.name + ".npy")).string(), data); },
               tensor.data);
}

template xt::xarray<float> load_case_batch(const Case&, const std::string&, const std::vector<std::size_t>&);
template xt::xarray<double> load_case_batch(const Case&, const std::string&, const std::vector<std::size_t>&);
template xt::xarray<float> load_case_tensor(const Case&, const std::string&, const std::vector<std::size_t>&);
template xt::xarray<double> load_case_tensor(const Case&, const std::string&, const std::vector<std::size_t>&);

}  // namespace attnconv
