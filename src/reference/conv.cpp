#include "reference/conv.hpp"

#include <stdexcept>

namespace attnconv::reference {

template <class T>
Image<T> conv2d(const Image<T>& x, const Kernel<T>& weight, const std::optional<Vector<T>>& bias,
                const ConvGeometry& g) {
  const int c_out = int(weight.shape(0));
  const int group_in = group_in_channels(x.shape(0), weight.shape(0), weight.shape(1), g.groups, "reference::conv2d");
  const int k1 = int(weight.shape(2)), k2 = int(weight.shape(3));
  const int group_out = c_out / g.groups;
  const auto [s1, s2] = g.stride;
  const auto [d1, d2] = g.dilation;
  const int h_out = conv_output_size(int(x.shape(1)), g.padding.top, g.padding.bottom, k1, s1, d1);
  const int w_out = conv_output_size(int(x.shape(2)), g.padding.left, g.padding.right, k2, s2, d2);
  if (h_out <= 0 || w_out <= 0) throw std::invalid_argument("reference::conv2d: kernel larger than padded input");
  const Image<T> xpad = pad(x, g.padding, g.padding_mode);

  Image<T> y({std::size_t(c_out), std::size_t(h_out), std::size_t(w_out)});
  for (int o = 0; o < c_out; ++o) {
    const int first = (o / group_out) * group_in;  // the group's first input channel
    for (int i = 0; i < h_out; ++i)
      for (int j = 0; j < w_out; ++j) {
        T sum = bias ? (*bias)(o) : T(0);
        for (int c = 0; c < group_in; ++c)
          for (int p = 0; p < k1; ++p)
            for (int q = 0; q < k2; ++q) sum += weight(o, c, p, q) * xpad(first + c, i * s1 + p * d1, j * s2 + q * d2);
        y(o, i, j) = sum;
      }
  }
  return y;
}

template <class T>
Sequence<T> conv1d(const Sequence<T>& x, const Kernel1d<T>& weight, const std::optional<Vector<T>>& bias,
                   const Conv1dGeometry& g) {
  const int length = int(x.shape(1)), c_out = int(weight.shape(0)), k = int(weight.shape(2));
  const int group_in = group_in_channels(x.shape(0), weight.shape(0), weight.shape(1), g.groups, "reference::conv1d");
  const int group_out = c_out / g.groups;
  const int l_out = conv_output_size(length, g.pad_left, g.pad_right, k, g.stride, g.dilation);
  if (l_out <= 0) throw std::invalid_argument("reference::conv1d: kernel larger than padded input");

  Sequence<T> y({std::size_t(c_out), std::size_t(l_out)});
  for (int o = 0; o < c_out; ++o) {
    const int first = (o / group_out) * group_in;  // the group's first input channel
    for (int i = 0; i < l_out; ++i) {
      T sum = bias ? (*bias)(o) : T(0);
      for (int c = 0; c < group_in; ++c)
        for (int p = 0; p < k; ++p) {
          // xpad[first + c, i*s + p*d]: the padded position, read through the padding mode (-1: a zero).
          const int source = source_index(i * g.stride + p * g.dilation - g.pad_left, length, g.padding_mode);
          sum += weight(o, c, p) * (source >= 0 ? x(first + c, source) : T(0));
        }
      y(o, i) = sum;
    }
  }
  return y;
}

template Image<float> conv2d(const Image<float>&, const Kernel<float>&, const std::optional<Vector<float>>&,
                             const ConvGeometry&);
template Image<double> conv2d(const Image<double>&, const Kernel<double>&, const std::optional<Vector<double>>&,
                              const ConvGeometry&);
template Sequence<float> conv1d(const Sequence<float>&, const Kernel1d<float>&, const std::optional<Vector<float>>&,
                                const Conv1dGeometry&);
template Sequence<double> conv1d(const Sequence<double>&, const Kernel1d<double>&,
                                 const std::optional<Vector<double>>&, const Conv1dGeometry&);

}  // namespace attnconv::reference
