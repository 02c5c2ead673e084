#include "acmix/random_weights.hpp"

namespace attnconv {

template <class T>
AcmixWeights<T> random_acmix_weights(const AcmixConfig& config, const AcmixInit& init, const Random& random) {
  const std::size_t c_in = std::size_t(config.in_channels), c_out = std::size_t(config.out_channels);
  const std::size_t hd = std::size_t(config.head_dim()), k = std::size_t(config.kernel_conv);
  const auto matrix = [&](const char* key, std::size_t rows, std::size_t cols) {
    return random.stream(purpose_id(key)).uniform_tensor<T, 2>({rows, cols});
  };
  const auto vector = [&](const char* key, std::size_t size, bool drawn) {
    return drawn ? random.stream(purpose_id(key)).uniform_tensor<T, 1>({size}) : Vector<T>(xt::zeros<T>({size}));
  };
  AcmixWeights<T> w;
  w.conv1_weight = matrix("conv1.weight", c_out, c_in);
  w.conv2_weight = matrix("conv2.weight", c_out, c_in);
  w.conv3_weight = matrix("conv3.weight", c_out, c_in);
  w.conv1_bias = vector("conv1.bias", c_out, init.projection_bias);
  w.conv2_bias = vector("conv2.bias", c_out, init.projection_bias);
  w.conv3_bias = vector("conv3.bias", c_out, init.projection_bias);
  w.conv_p_weight = matrix("conv_p.weight", hd, 2);
  w.conv_p_bias = vector("conv_p.bias", hd, true);
  w.fc_weight = matrix("fc.weight", k * k, 3 * std::size_t(config.heads));
  w.dep_conv_weight = init.dep_init == "random"
                          ? random.stream(purpose_id("dep_conv.weight")).uniform_tensor<T, 4>({c_out, k * k, k, k})
                          : shift_dep_conv_weight<T>(config);
  if (init.dep_conv_bias) w.dep_conv_bias = vector("dep_conv.bias", c_out, true);
  w.rate1 = T(init.rates[0]);
  w.rate2 = T(init.rates[1]);
  return w;
}

template AcmixWeights<float> random_acmix_weights(const AcmixConfig&, const AcmixInit&, const Random&);
template AcmixWeights<double> random_acmix_weights(const AcmixConfig&, const AcmixInit&, const Random&);

}  // namespace attnconv
