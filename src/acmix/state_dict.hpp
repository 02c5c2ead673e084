#pragma once
// ACmix parameters <-> the reference's state_dict: keys and PyTorch shapes
// (conv1.weight (C_out, C_in, 1, 1), fc.weight (k^2, 3N, 1, 1), rate1 (1,), ...).
#include <map>
#include <string>
#include <vector>

#include <utility>
#include <xtensor/xarray.hpp>

#include "acmix/acmix_module.hpp"

namespace attnconv {

struct StateDictEntry {
  std::string key;
  std::vector<std::size_t> shape;
};

// Every entry, in the reference's order; dep_conv.bias only when `dep_conv_bias`.
std::vector<StateDictEntry> acmix_state_dict_entries(const AcmixConfig& config, bool dep_conv_bias);

// The parameters as tensors named by their keys, in PyTorch shapes, in the reference's order.
template <class T> using StateDict = std::vector<std::pair<std::string, xt::xarray<T>>>;
template <class T> StateDict<T> acmix_state_dict(const AcmixWeights<T>& w);

// From tensors keyed and shaped as acmix_state_dict_entries says (dep_conv.bias optional).
template <class T>
AcmixWeights<T> acmix_weights_from(const AcmixConfig& config, const std::map<std::string, xt::xarray<T>>& tensors);

}  // namespace attnconv
