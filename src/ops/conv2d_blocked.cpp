#include "ops/conv2d_blocked.hpp"

#include <algorithm>
#include <stdexcept>

#include "parallel/threads.hpp"
#include "tensor/vectorise.hpp"

namespace attnconv {

namespace {

// y[j] += w * x[j * stride] for j < n: one kernel tap along an output row
// (tensor/vectorise.hpp: an AVX2 clone with the same numbers).
template <class T>
ATTNCONV_AVX2_CLONES void add_scaled_row(T w, const T* x, int stride, int n, T* y) {
  if (stride == 1)  // the same loop; unit stride lets the compiler vectorise it
    for (int j = 0; j < n; ++j) y[j] += w * x[j];
  else
    for (int j = 0; j < n; ++j) y[j] += w * x[j * stride];
}

}  // namespace

template <class T>
Image<T> conv2d_blocked(const Image<T>& x, const Kernel<T>& weight, const std::optional<Vector<T>>& bias,
                        const ConvGeometry& g) {
  const int group_in = group_in_channels(x.shape(0), weight.shape(0), weight.shape(1), g.groups, "conv2d_blocked");
  const Image<T> xpad = pad(x, g.padding, g.padding_mode);
  const int c_out = int(weight.shape(0)), group_out = c_out / g.groups;
  const int k1 = int(weight.shape(2)), k2 = int(weight.shape(3));
  const int s1 = g.stride[0], s2 = g.stride[1], d1 = g.dilation[0], d2 = g.dilation[1];
  const int h_out = conv_output_size(int(x.shape(1)), g.padding.top, g.padding.bottom, k1, s1, d1);
  const int w_out = conv_output_size(int(x.shape(2)), g.padding.left, g.padding.right, k2, s2, d2);
  if (h_out <= 0 || w_out <= 0) throw std::invalid_argument("conv2d_blocked: kernel larger than padded input");

  // Loops ordered for the cache: blocks of output rows, spread over threads;
  // within a block the innermost loop runs along an output row, so the block of
  // y stays in L1 and its rows of xpad in L2 while every tap is applied. Each
  // output still sums bias, then c, p, q in that order, exactly as
  // y[o,i,j] = b[o] + sum_{c,p,q} W[o,c,p,q] xpad[first + c, i s1 + p d1, j s2 + q d2]
  // with first = g(o) C_in/groups the first input channel of o's group.
  constexpr int block_rows = 4;
  Image<T> y({std::size_t(c_out), std::size_t(h_out), std::size_t(w_out)});
  parallel_for(std::size_t((h_out + block_rows - 1) / block_rows), [&](std::size_t block, std::size_t) {
    const int i0 = int(block) * block_rows, i1 = std::min(h_out, i0 + block_rows);
    for (int o = 0; o < c_out; ++o) {
      const int first = (o / group_out) * group_in;
      for (int i = i0; i < i1; ++i)
        for (int j = 0; j < w_out; ++j) y(o, i, j) = bias ? (*bias)(o) : T(0);
      for (int c = 0; c < group_in; ++c)
        for (int p = 0; p < k1; ++p)
          for (int q = 0; q < k2; ++q) {
            const T w = weight(o, c, p, q);
            for (int i = i0; i < i1; ++i)
              add_scaled_row(w, &xpad(first + c, i * s1 + p * d1, q * d2), s2, w_out, &y(o, i, 0));
          }
    }
  });
  return y;
}

template Image<float> conv2d_blocked(const Image<float>&, const Kernel<float>&, const std::optional<Vector<float>>&,
                                       const ConvGeometry&);
template Image<double> conv2d_blocked(const Image<double>&, const Kernel<double>&,
                                        const std::optional<Vector<double>>&, const ConvGeometry&);

}  // namespace attnconv
