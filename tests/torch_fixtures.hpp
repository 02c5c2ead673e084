#pragma once
// The one reader of the PyTorch fixtures under tests/fixtures/<set>/: each set
// has a manifest.json whose lists (`cases`, or one list per kind of fixture)
// name the fixtures; a fixture is a folder of .npy files, <set>/<name>/ for
// the `cases` list and <set>/<list>/<name>/ for the others.
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

namespace attnconv::testing {

struct TorchFixture {
  nlohmann::json entry;  // its row of the manifest
  std::string dir;       // its folder, ending in '/'

  std::string name() const { return entry["name"].get<std::string>(); }
  // <dir>/<key>.npy as float64 (every fixture is written in float64), as T.
  template <class T = xt::xarray<double>> T load(const std::string& key) const {
    return T(xt::load_npy<double>(dir + key + ".npy"));
  }
};

// The fixtures of one manifest list, in manifest order; `kind`, when given,
// keeps the rows whose "kind" is it. Throws when the manifest or the list is
// missing, so a test never passes over no fixtures.
inline std::vector<TorchFixture> torch_fixtures(const std::string& set, const std::string& list = "cases",
                                                const std::string& kind = "") {
  const std::string root = std::string(ATTNCONV_SOURCE_DIR) + "/tests/fixtures/" + set + "/";
  std::ifstream stream(root + "manifest.json");
  if (!stream) throw std::runtime_error("cannot read " + root + "manifest.json");
  const nlohmann::json manifest = nlohmann::json::parse(stream);
  if (!manifest.contains(list)) throw std::runtime_error(root + "manifest.json has no list '" + list + "'");
  const std::string folder = list == "cases" ? root : root + list + "/";
  std::vector<TorchFixture> fixtures;
  for (const auto& entry : manifest[list])
    if (kind.empty() || entry.value("kind", "") == kind)
      fixtures.push_back({entry, folder + entry["name"].get<std::string>() + "/"});
  if (fixtures.empty()) throw std::runtime_error(root + "manifest.json: no fixture in '" + list + "' " + kind);
  return fixtures;
}

}  // namespace attnconv::testing
