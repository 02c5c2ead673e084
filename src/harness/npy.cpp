#include "harness/npy.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <xtensor/xnpy.hpp>

#include "harness/errors.hpp"

namespace attnconv {

namespace fs = std::filesystem;

bool has_case_tensor(const Case& c, const std::string& key) { return c.weights.contains(key); }

void check_tensor_names(const Case& c, const std::vector<std::string>& known) {
  for (const auto& [key, value] : c.weights.items())
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      const std::string best = closest(key, known);
      std::string list;
      for (const auto& name : known) list += (list.empty() ? "" : ", ") + name;
      throw InputError(c.file + ": case '" + c.name + "': key 'weights." + key + "': unknown tensor" +
                       (best.empty() ? "" : " (did you mean '" + best + "'?)") + "; expected one of " + list);
    }
}

namespace {
std::string shape_string(const std::vector<std::size_t>& shape) {
  std::string s = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}
}  // namespace

template <class T>
xt::xarray<T> load_case_tensor(const Case& c, const std::string& key, const std::vector<std::size_t>& shape) {
  const std::string where = c.file + ": case '" + c.name + "': key 'weights." + key + "': ";
  const fs::path path = fs::path(c.file).parent_path() / c.weights.at(key).get<std::string>();
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw InputError(where + "cannot read " + path.string());
  auto file = [&] {
    try {
      return xt::detail::load_npy_file(stream);
    } catch (const std::exception& e) {
      throw InputError(where + path.string() + " is not a valid .npy file (" + e.what() + ")");
    }
  }();
  if (!stream) throw InputError(where + path.string() + " is truncated");
  const std::string want = sizeof(T) == 8 ? "<f8" : "<f4";
  if (file.m_typestring != want)
    throw InputError(where + path.string() + " holds dtype '" + file.m_typestring + "', expected '" + want + "' (" +
                     c.params.value("dtype", std::string("float64")) + ")");
  if (file.m_fortran_order) throw InputError(where + path.string() + " is in Fortran order; save it C-contiguous");
  if (file.m_shape != shape)
    throw InputError(where + path.string() + " has shape " + shape_string(file.m_shape) + ", expected " +
                     shape_string(shape));
  xt::xarray<T> out = file.template cast<T>();
  for (const T& value : out)
    if (!std::isfinite(value)) throw InputError(where + path.string() + " holds NaN or Inf");
  return out;
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
