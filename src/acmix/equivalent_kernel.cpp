#include "acmix/equivalent_kernel.hpp"

#include <xtensor/xview.hpp>

namespace attnconv {

template <class T> EquivalentConv<T> conv_path_equivalent(const AcmixConfig& config, const AcmixWeights<T>& w) {
  const int c_in = config.in_channels, c_out = config.out_channels, heads = config.heads, hd = config.head_dim();
  const int k = config.kernel_conv, k2 = k * k;
  const Matrix<T>* weights[3] = {&w.conv1_weight, &w.conv2_weight, &w.conv3_weight};
  const Vector<T>* biases[3] = {&w.conv1_bias, &w.conv2_bias, &w.conv3_bias};

  // A (hd, k^2, C_in + 1): the fc-mixed Stage I, with a0 as the last column.
  xt::xtensor<T, 3> mixed = xt::zeros<T>({std::size_t(hd), std::size_t(k2), std::size_t(c_in + 1)});
  for (int d = 0; d < hd; ++d)
    for (int kk = 0; kk < k2; ++kk)
      for (int t = 0; t < 3; ++t)
        for (int n = 0; n < heads; ++n) {
          const T mix = w.fc_weight(kk, t * heads + n);
          const int row = n * hd + d;
          for (int c = 0; c < c_in; ++c) mixed(d, kk, c) += mix * (*weights[t])(row, c);
          mixed(d, kk, c_in) += mix * (*biases[t])(row);
        }

  EquivalentConv<T> eq;
  eq.weight = xt::zeros<T>({std::size_t(c_out), std::size_t(c_in + 1), std::size_t(k), std::size_t(k)});
  for (int o = 0; o < c_out; ++o) {
    const int d = o / heads;  // dep_conv group of output channel o
    for (int c = 0; c <= c_in; ++c)
      for (int a = 0; a < k; ++a)
        for (int b = 0; b < k; ++b)
          for (int kk = 0; kk < k2; ++kk) eq.weight(o, c, a, b) += w.dep_conv_weight(o, kk, a, b) * mixed(d, kk, c);
  }
  eq.bias = w.dep_conv_bias ? *w.dep_conv_bias : Vector<T>(xt::zeros<T>({std::size_t(c_out)}));
  const int pad = k / 2;
  eq.geometry.padding = {pad, pad, pad, pad};
  eq.geometry.stride = {config.stride, config.stride};
  return eq;
}

template <class T> EquivalentConv<T> plain_conv_of(const EquivalentConv<T>& eq) {
  const std::size_t c_in = eq.weight.shape(1) - 1;
  EquivalentConv<T> plain;
  plain.weight = xt::view(eq.weight, xt::all(), xt::range(0, c_in), xt::all(), xt::all());
  plain.bias = eq.bias;
  for (std::size_t o = 0; o < eq.weight.shape(0); ++o)
    for (std::size_t a = 0; a < eq.weight.shape(2); ++a)
      for (std::size_t b = 0; b < eq.weight.shape(3); ++b) plain.bias(o) += eq.weight(o, c_in, a, b);
  plain.geometry = eq.geometry;
  return plain;
}

template <class T> Image<T> append_ones_channel(const Image<T>& x) {
  Image<T> out({x.shape(0) + 1, x.shape(1), x.shape(2)});
  xt::view(out, xt::range(0, x.shape(0)), xt::all(), xt::all()) = x;
  xt::view(out, x.shape(0), xt::all(), xt::all()) = T(1);
  return out;
}

std::array<int, 2> interior_range(int input, int kernel, int stride) {
  const int pad = kernel / 2;
  // window rows i*s - pad ... i*s + pad must lie in [0, input - 1]
  const int first = (pad + stride - 1) / stride;
  const int last = input - 1 - pad < 0 ? -1 : (input - 1 - pad) / stride;
  return {first, last};
}

template EquivalentConv<float> conv_path_equivalent(const AcmixConfig&, const AcmixWeights<float>&);
template EquivalentConv<double> conv_path_equivalent(const AcmixConfig&, const AcmixWeights<double>&);
template EquivalentConv<float> plain_conv_of(const EquivalentConv<float>&);
template EquivalentConv<double> plain_conv_of(const EquivalentConv<double>&);
template Image<float> append_ones_channel(const Image<float>&);
template Image<double> append_ones_channel(const Image<double>&);

}  // namespace attnconv
