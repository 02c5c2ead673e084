#include "acmix/shift.hpp"

#include "acmix/grouped_conv.hpp"

namespace attnconv {

template <class T>
Image<T> shift_zero_fill(const Image<T>& g, std::array<int, 2> offset, std::array<int, 2> stride,
                         std::array<int, 2> out_size) {
  const int channels = int(g.shape(0)), height = int(g.shape(1)), width = int(g.shape(2));
  Image<T> out = xt::zeros<T>({std::size_t(channels), std::size_t(out_size[0]), std::size_t(out_size[1])});
  for (int c = 0; c < channels; ++c)
    for (int i = 0; i < out_size[0]; ++i) {
      const int si = i * stride[0] + offset[0];
      if (si < 0 || si >= height) continue;
      for (int j = 0; j < out_size[1]; ++j) {
        const int sj = j * stride[1] + offset[1];
        if (sj >= 0 && sj < width) out(c, i, j) = g(c, si, sj);
      }
    }
  return out;
}

template <class T> Kernel<T> one_hot_depthwise_kernel(std::size_t channels, std::array<int, 2> kernel, int p, int q) {
  Kernel<T> k = xt::zeros<T>({channels, std::size_t(1), std::size_t(kernel[0]), std::size_t(kernel[1])});
  for (std::size_t c = 0; c < channels; ++c) k(c, 0, std::size_t(p), std::size_t(q)) = T(1);
  return k;
}

template <class T>
Image<T> shift_depthwise(const Image<T>& g, std::array<int, 2> kernel, int p, int q, const ConvGeometry& geometry,
                         OpCounter& counter) {
  const std::size_t channels = g.shape(0);
  ConvGeometry zero_padded = geometry;
  zero_padded.padding_mode = PaddingMode::zeros;
  return grouped_conv2d(g, one_hot_depthwise_kernel<T>(channels, kernel, p, q), std::optional<Vector<T>>{},
                        int(channels), zero_padded, counter, "stage2.depthwise_shift");
}

template Image<float> shift_zero_fill(const Image<float>&, std::array<int, 2>, std::array<int, 2>,
                                      std::array<int, 2>);
template Kernel<float> one_hot_depthwise_kernel<float>(std::size_t, std::array<int, 2>, int, int);
template Image<float> shift_depthwise(const Image<float>&, std::array<int, 2>, int, int, const ConvGeometry&, OpCounter&);
template Image<double> shift_zero_fill(const Image<double>&, std::array<int, 2>, std::array<int, 2>,
                                      std::array<int, 2>);
template Kernel<double> one_hot_depthwise_kernel<double>(std::size_t, std::array<int, 2>, int, int);
template Image<double> shift_depthwise(const Image<double>&, std::array<int, 2>, int, int, const ConvGeometry&, OpCounter&);

}  // namespace attnconv
