#include "acmix/acmix_module.hpp"

#include "acmix/pointwise.hpp"

namespace attnconv {

bool acmix_window_fits(const AcmixConfig& config, int height, int width) {
  const int half = config.kernel_att / 2;
  return config.heads >= 1 && config.out_channels >= config.heads && config.out_channels % config.heads == 0 &&
         config.kernel_att >= 1 && config.stride >= 1 && half < height && half < width;
}

template <class T> Image<T> position_map(int height, int width) {
  // torch.linspace(start, end, steps): step = (end - start) / (steps - 1); the
  // first half counts up from start, the second half down from end.
  const auto linspace = [](int steps, int index) {
    if (steps == 1) return T(-1);
    const T step = (T(1) - T(-1)) / T(steps - 1);
    return index < steps / 2 ? T(-1) + step * T(index) : T(1) - step * T(steps - index - 1);
  };
  Image<T> loc({std::size_t(2), std::size_t(height), std::size_t(width)});
  for (int i = 0; i < height; ++i)
    for (int j = 0; j < width; ++j) {
      loc(0, i, j) = linspace(width, j);
      loc(1, i, j) = linspace(height, i);
    }
  return loc;
}

template <class T> AcmixStage1<T> acmix_stage1(const AcmixWeights<T>& w, const Image<T>& x, OpCounter& counter) {
  return {pointwise_conv(x, w.conv1_weight, std::optional<Vector<T>>(w.conv1_bias), counter, "stage1.projection"),
          pointwise_conv(x, w.conv2_weight, std::optional<Vector<T>>(w.conv2_bias), counter, "stage1.projection"),
          pointwise_conv(x, w.conv3_weight, std::optional<Vector<T>>(w.conv3_bias), counter, "stage1.projection")};
}

template <class T>
AcmixOutput<T> acmix_forward(const AcmixConfig& config, const AcmixWeights<T>& w, const Image<T>& x,
                             OpCounter& counter) {
  const AcmixStage1<T> s1 = acmix_stage1(w, x, counter);
  AcmixOutput<T> out;
  out.attention = acmix_attention_path(config, w, s1, counter);
  out.convolution = acmix_conv_path(config, w, s1, counter);
  out.output = w.rate1 * out.attention + w.rate2 * out.convolution;
  return out;
}

template <class T> Kernel<T> shift_dep_conv_weight(const AcmixConfig& config) {
  const std::size_t k = std::size_t(config.kernel_conv);
  Kernel<T> weight = xt::zeros<T>({std::size_t(config.out_channels), k * k, k, k});
  for (std::size_t o = 0; o < weight.shape(0); ++o)
    for (std::size_t kk = 0; kk < k * k; ++kk) weight(o, kk, kk / k, kk % k) = T(1);
  return weight;
}

template Image<float> position_map<float>(int, int);
template Image<double> position_map<double>(int, int);
template AcmixStage1<float> acmix_stage1(const AcmixWeights<float>&, const Image<float>&, OpCounter&);
template AcmixStage1<double> acmix_stage1(const AcmixWeights<double>&, const Image<double>&, OpCounter&);
template AcmixOutput<float> acmix_forward(const AcmixConfig&, const AcmixWeights<float>&, const Image<float>&,
                                          OpCounter&);
template AcmixOutput<double> acmix_forward(const AcmixConfig&, const AcmixWeights<double>&, const Image<double>&,
                                           OpCounter&);
template Kernel<float> shift_dep_conv_weight<float>(const AcmixConfig&);
template Kernel<double> shift_dep_conv_weight<double>(const AcmixConfig&);

}  // namespace attnconv
