#include "harness/npy.hpp"

#include <limits.h>

#include <algorithm>
#include <filesystem>
#include <xtensor/xnpy.hpp>

#include "harness/errors.hpp"
#include "harness/npy_check.hpp"
#include "harness/quote.hpp"

namespace attnconv {

namespace fs = std::filesystem;

bool has_case_tensor(const Case& c, const std::string& key) { return c.weights.contains(key); }

void check_tensor_names(const Case& c, const std::vector<std::string>& known) {
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
  const fs::path path = fs::path(c.file).parent_path() / c.weights.at(key).get<std::string>();
  NpyTensor<T> tensor;
  try {
    tensor = read_npy_file<T>(path.string(), shape);
  } catch (const std::runtime_error& e) {
    throw InputError(where + e.what());
  }
  // The provenance in the report is the file checked when loading: it must be the one read now.
  const json loaded = c.provenance.value(key, json::object());
  if (loaded.contains("sha256") && loaded["sha256"] != tensor.digest.sha256)
    throw InputError(where + clip(path.string(), PATH_MAX) + " changed after the cases were loaded (SHA-256 " +
                     loaded["sha256"].get<std::string>() + " then, " + tensor.digest.sha256 + " now)");
  return std::move(tensor.values);
}

void dump_tensors(const std::string& dir, const std::vector<NamedTensor>& tensors) {
  fs::create_directories(dir);
  for (const auto& tensor : tensors)
    std::visit([&](const auto& data) { xt::dump_npy((fs::path(dir) / (tensor.name + ".npy")).string(), data); },
               tensor.data);
}

template xt::xarray<float> load_case_tensor(const Case&, const std::string&, const std::vector<std::size_t>&);
template xt::xarray<double> load_case_tensor(const Case&, const std::string&, const std::vector<std::size_t>&);

}  // namespace attnconv
