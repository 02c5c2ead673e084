#include "acmix/state_dict.hpp"

#include <stdexcept>

namespace attnconv {

std::vector<StateDictEntry> acmix_state_dict_entries(const AcmixConfig& config, bool dep_conv_bias) {
  const std::size_t c_in = std::size_t(config.in_channels), c_out = std::size_t(config.out_channels);
  const std::size_t hd = std::size_t(config.head_dim()), k = std::size_t(config.kernel_conv);
  std::vector<StateDictEntry> entries{{"rate1", {1}},
                                      {"rate2", {1}},
                                      {"conv1.weight", {c_out, c_in, 1, 1}},
                                      {"conv1.bias", {c_out}},
                                      {"conv2.weight", {c_out, c_in, 1, 1}},
                                      {"conv2.bias", {c_out}},
                                      {"conv3.weight", {c_out, c_in, 1, 1}},
                                      {"conv3.bias", {c_out}},
                                      {"conv_p.weight", {hd, 2, 1, 1}},
                                      {"conv_p.bias", {hd}},
                                      {"fc.weight", {k * k, 3 * std::size_t(config.heads), 1, 1}},
                                      {"dep_conv.weight", {c_out, k * k, k, k}}};
  if (dep_conv_bias) entries.push_back({"dep_conv.bias", {c_out}});
  return entries;
}

namespace {
template <class T> xt::xarray<T> as_conv1x1(const Matrix<T>& m) {
  xt::xarray<T> out = m;
  out.reshape({m.shape(0), m.shape(1), 1, 1});
  return out;
}
template <class T> Matrix<T> from_conv1x1(const xt::xarray<T>& a) {
  xt::xarray<T> copy = a;
  copy.reshape({a.shape(0), a.shape(1)});
  return Matrix<T>(copy);
}
}  // namespace

template <class T> StateDict<T> acmix_state_dict(const AcmixWeights<T>& w) {
  StateDict<T> out{{"rate1", xt::xarray<T>({w.rate1})},
                   {"rate2", xt::xarray<T>({w.rate2})},
                   {"conv1.weight", as_conv1x1(w.conv1_weight)},
                   {"conv1.bias", xt::xarray<T>(w.conv1_bias)},
                   {"conv2.weight", as_conv1x1(w.conv2_weight)},
                   {"conv2.bias", xt::xarray<T>(w.conv2_bias)},
                   {"conv3.weight", as_conv1x1(w.conv3_weight)},
                   {"conv3.bias", xt::xarray<T>(w.conv3_bias)},
                   {"conv_p.weight", as_conv1x1(w.conv_p_weight)},
                   {"conv_p.bias", xt::xarray<T>(w.conv_p_bias)},
                   {"fc.weight", as_conv1x1(w.fc_weight)},
                   {"dep_conv.weight", xt::xarray<T>(w.dep_conv_weight)}};
  if (w.dep_conv_bias) out.push_back({"dep_conv.bias", xt::xarray<T>(*w.dep_conv_bias)});
  return out;
}

template <class T>
AcmixWeights<T> acmix_weights_from(const AcmixConfig& config, const std::map<std::string, xt::xarray<T>>& tensors) {
  const auto get = [&](const std::string& key) -> const xt::xarray<T>& {
    const auto found = tensors.find(key);
    if (found == tensors.end()) throw std::invalid_argument("ACmix state_dict: missing '" + key + "'");
    return found->second;
  };
  const bool has_bias = tensors.count("dep_conv.bias") > 0;
  for (const auto& entry : acmix_state_dict_entries(config, has_bias)) {
    const auto& shape = get(entry.key).shape();
    if (std::vector<std::size_t>(shape.begin(), shape.end()) != entry.shape)
      throw std::invalid_argument("ACmix state_dict: '" + entry.key + "' has the wrong shape");
  }
  AcmixWeights<T> w;
  w.rate1 = get("rate1")(0);
  w.rate2 = get("rate2")(0);
  w.conv1_weight = from_conv1x1(get("conv1.weight"));
  w.conv2_weight = from_conv1x1(get("conv2.weight"));
  w.conv3_weight = from_conv1x1(get("conv3.weight"));
  w.conv1_bias = get("conv1.bias");
  w.conv2_bias = get("conv2.bias");
  w.conv3_bias = get("conv3.bias");
  w.conv_p_weight = from_conv1x1(get("conv_p.weight"));
  w.conv_p_bias = get("conv_p.bias");
  w.fc_weight = from_conv1x1(get("fc.weight"));
  w.dep_conv_weight = get("dep_conv.weight");
  if (has_bias) w.dep_conv_bias = Vector<T>(get("dep_conv.bias"));
  return w;
}

template StateDict<float> acmix_state_dict(const AcmixWeights<float>&);
template StateDict<double> acmix_state_dict(const AcmixWeights<double>&);
template AcmixWeights<float> acmix_weights_from(const AcmixConfig&, const std::map<std::string, xt::xarray<float>>&);
template AcmixWeights<double> acmix_weights_from(const AcmixConfig&,
                                                 const std::map<std::string, xt::xarray<double>>&);

}  // namespace attnconv
