#include "ops/conv2d_reference.hpp"

#include <stdexcept>

namespace attnconv {

int conv_output_size(int input, int pad_before, int pad_after, int kernel, int stride, int dilation) {
  const int span = input + pad_before + pad_after - dilation * (kernel - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

template <class T>
Image<T> conv2d_reference(const Image<T>& x, const Kernel<T>& weight, const std::optional<Vector<T>>& bias,
                          const ConvGeometry& g) {
  if (weight.shape(1) != x.shape(0)) throw std::invalid_argument("conv2d_reference: channel mismatch");
  const Image<T> xpad = pad(x, g.padding, g.padding_mode);
  const int c_out = int(weight.shape(0)), c_in = int(weight.shape(1));
  const int k1 = int(weight.shape(2)), k2 = int(weight.shape(3));
  const auto [s1, s2] = g.stride;
  const auto [d1, d2] = g.dilation;
  const int h_out = conv_output_size(int(x.shape(1)), g.padding.top, g.padding.bottom, k1, s1, d1);
  const int w_out = conv_output_size(int(x.shape(2)), g.padding.left, g.padding.right, k2, s2, d2);
  if (h_out <= 0 || w_out <= 0) throw std::invalid_argument("conv2d_reference: kernel larger than padded input");

  Image<T> y({std::size_t(c_out), std::size_t(h_out), std::size_t(w_out)});
  for (int o = 0; o < c_out; ++o)
    for (int i = 0; i < h_out; ++i)
      for (int j = 0; j < w_out; ++j) {
        T sum = bias ? (*bias)(o) : T(0);
        for (int c = 0; c < c_in; ++c)
          for (int p = 0; p < k1; ++p)
            for (int q = 0; q < k2; ++q) sum += weight(o, c, p, q) * xpad(c, i * s1 + p * d1, j * s2 + q * d2);
        y(o, i, j) = sum;
      }
  return y;
}

template Image<float> conv2d_reference(const Image<float>&, const Kernel<float>&, const std::optional<Vector<float>>&,
                                       const ConvGeometry&);
template Image<double> conv2d_reference(const Image<double>&, const Kernel<double>&,
                                        const std::optional<Vector<double>>&, const ConvGeometry&);

}  // namespace attnconv
