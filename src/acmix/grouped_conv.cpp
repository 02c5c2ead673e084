#include "acmix/grouped_conv.hpp"

#include <stdexcept>

namespace attnconv {

template <class T>
Image<T> grouped_conv2d(const Image<T>& x, const Kernel<T>& weight, const std::optional<Vector<T>>& bias, int groups,
                        const ConvGeometry& g, OpCounter& counter, const std::string& label) {
  const int c_in = int(x.shape(0)), c_out = int(weight.shape(0)), per_group_in = int(weight.shape(1));
  const int k1 = int(weight.shape(2)), k2 = int(weight.shape(3));
  if (groups < 1 || c_in % groups != 0 || c_out % groups != 0 || per_group_in * groups != c_in)
    throw std::invalid_argument("grouped_conv2d: channels do not split into the groups");
  const int per_group_out = c_out / groups;
  const Image<T> xpad = pad(x, g.padding, g.padding_mode);
  const auto [s1, s2] = g.stride;
  const auto [d1, d2] = g.dilation;
  const int h_out = conv_output_size(int(x.shape(1)), g.padding.top, g.padding.bottom, k1, s1, d1);
  const int w_out = conv_output_size(int(x.shape(2)), g.padding.left, g.padding.right, k2, s2, d2);
  if (h_out <= 0 || w_out <= 0) throw std::invalid_argument("grouped_conv2d: kernel larger than padded input");
  Image<T> y({std::size_t(c_out), std::size_t(h_out), std::size_t(w_out)});
  for (int o = 0; o < c_out; ++o) {
    const int first = (o / per_group_out) * per_group_in;
    for (int i = 0; i < h_out; ++i)
      for (int j = 0; j < w_out; ++j) {
        T sum = bias ? (*bias)(o) : T(0);
        for (int c = 0; c < per_group_in; ++c)
          for (int p = 0; p < k1; ++p)
            for (int q = 0; q < k2; ++q) sum += weight(o, c, p, q) * xpad(first + c, i * s1 + p * d1, j * s2 + q * d2);
        y(o, i, j) = sum;
      }
  }
  counter.add(label, std::int64_t(c_out) * per_group_in * k1 * k2 * h_out * w_out);
  return y;
}

template Image<float> grouped_conv2d(const Image<float>&, const Kernel<float>&, const std::optional<Vector<float>>&, int,
                                     const ConvGeometry&, OpCounter&, const std::string&);
template Image<double> grouped_conv2d(const Image<double>&, const Kernel<double>&,
                                      const std::optional<Vector<double>>&, int, const ConvGeometry&, OpCounter&,
                                      const std::string&);

}  // namespace attnconv
