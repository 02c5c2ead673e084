#include "acmix/conv_decomposition.hpp"

#include <stdexcept>
#include <xtensor/xview.hpp>

#include "acmix/pointwise.hpp"
#include "acmix/shift.hpp"

namespace attnconv {

template <class T>
Image<T> conv2d_decomposed(const Image<T>& x, const Kernel<T>& weight, const std::optional<Vector<T>>& bias,
                           const ConvGeometry& geometry, ShiftMethod method, OpCounter& counter) {
  // A non-zero padding mode: pad first, then decompose the unpadded ("valid") convolution.
  const bool pad_first = geometry.padding_mode != PaddingMode::zeros;
  const Image<T> source = pad_first ? pad(x, geometry.padding, geometry.padding_mode) : x;
  ConvGeometry g = geometry;
  if (pad_first) g.padding = Padding{}, g.padding_mode = PaddingMode::zeros;

  const std::array<int, 2> kernel{int(weight.shape(2)), int(weight.shape(3))};
  const int h_out = conv_output_size(int(source.shape(1)), g.padding.top, g.padding.bottom, kernel[0], g.stride[0],
                                     g.dilation[0]);
  const int w_out = conv_output_size(int(source.shape(2)), g.padding.left, g.padding.right, kernel[1], g.stride[1],
                                     g.dilation[1]);
  if (h_out <= 0 || w_out <= 0) throw std::invalid_argument("conv2d_decomposed: kernel larger than padded input");
  const std::size_t c_out = weight.shape(0);

  Image<T> y = xt::zeros<T>({c_out, std::size_t(h_out), std::size_t(w_out)});
  if (bias)
    for (std::size_t o = 0; o < c_out; ++o) xt::view(y, o, xt::all(), xt::all()) = (*bias)(o);
  for (int p = 0; p < kernel[0]; ++p)
    for (int q = 0; q < kernel[1]; ++q) {
      const Matrix<T> w_pq = xt::view(weight, xt::all(), xt::all(), p, q);
      const Image<T> g_pq =
          pointwise_conv(source, w_pq, std::optional<Vector<T>>{}, counter, "stage1.projection", g.groups);
      const Image<T> shifted =
          method == ShiftMethod::tensor_shift
              ? shift_zero_fill(g_pq, {p * g.dilation[0] - g.padding.top, q * g.dilation[1] - g.padding.left},
                                g.stride, {h_out, w_out})
              : shift_depthwise(g_pq, kernel, p, q, g, counter);
      y += shifted;
      counter.add("stage2.shift_sum", std::int64_t(c_out) * h_out * w_out);
    }
  return y;
}

template Image<float> conv2d_decomposed(const Image<float>&, const Kernel<float>&, const std::optional<Vector<float>>&,
                                        const ConvGeometry&, ShiftMethod, OpCounter&);
template Image<double> conv2d_decomposed(const Image<double>&, const Kernel<double>&,
                                         const std::optional<Vector<double>>&, const ConvGeometry&, ShiftMethod,
                                         OpCounter&);

}  // namespace attnconv
