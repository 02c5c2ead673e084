#include "acmix/conv_decomposition.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>
#include <xtensor/xview.hpp>

#include "acmix/pointwise.hpp"
#include "acmix/shift.hpp"
#include "parallel/threads.hpp"
#include "tensor/gemm.hpp"

namespace attnconv {

namespace {

// The output indices i in [0, n_out) whose source i * s + offset lies in [0, size): [lo, hi).
std::pair<int, int> kept(int offset, int s, int size, int n_out) {
  const int lo = offset >= 0 ? 0 : (-offset + s - 1) / s;
  const int hi = offset >= size ? 0 : std::min(n_out, (size - offset + s - 1) / s);
  return {lo, std::max(lo, hi)};
}

// y[:, i, j] += w_pq source[:, i s1 + off1, j s2 + off2], w_pq = W[:, :, p, q], for the (i, j)
// whose source pixel exists: tensor_shift's g_pq at the pixels its shift keeps, the same
// product (one per group, single-threaded BLAS) on a gathered block of them.
template <class T>
void add_fused_tap(const Image<T>& source, const Matrix<T>& w_pq, int p, int q, const ConvGeometry& g, Image<T>& y) {
  const int c_in = int(source.shape(0)), height = int(source.shape(1)), width = int(source.shape(2));
  const int c_out = int(y.shape(0)), h_out = int(y.shape(1)), w_out = int(y.shape(2));
  const int group_in = int(w_pq.shape(1)), group_out = c_out / g.groups;
  const int off1 = p * g.dilation[0] - g.padding.top, off2 = q * g.dilation[1] - g.padding.left;
  // Plain variables, not structured bindings: clang 14 cannot capture those in the lambda below.
  const std::pair<int, int> rows = kept(off1, g.stride[0], height, h_out), cols = kept(off2, g.stride[1], width, w_out);
  const int i_lo = rows.first, i_hi = rows.second, j_lo = cols.first, j_hi = cols.second;
  const std::size_t nj = std::size_t(j_hi - j_lo), pixels = std::size_t(i_hi - i_lo) * nj;
  if (pixels == 0) return;
  constexpr std::size_t block = 256;  // output pixels per product: fixed, so the numbers do not depend on threads
  const std::size_t blocks = (pixels + block - 1) / block;
  std::vector<std::vector<T>> scratch(parallel_threads(blocks));
  parallel_for(blocks, [&](std::size_t b, std::size_t t) {
    const std::size_t first = b * block, n = std::min(block, pixels - first);
    std::vector<T>& buffer = scratch[t];
    buffer.resize(std::size_t(c_in + c_out) * block);
    T* xs = buffer.data();
    T* gs = xs + std::size_t(c_in) * n;
    for (int c = 0; c < c_in; ++c)
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t m = first + k;
        const int i = i_lo + int(m / nj), j = j_lo + int(m % nj);
        xs[std::size_t(c) * n + k] = source(c, i * g.stride[0] + off1, j * g.stride[1] + off2);
      }
    for (int group = 0; group < g.groups; ++group) {
      const std::size_t o = std::size_t(group) * group_out, c = std::size_t(group) * group_in;
      gemm(group_out, n, group_in, &w_pq(o, 0), group_in, xs + c * n, n, T(0), gs + o * n, n);
    }
    for (int o = 0; o < c_out; ++o)
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t m = first + k;
        y(o, i_lo + int(m / nj), j_lo + int(m % nj)) += gs[std::size_t(o) * n + k];
      }
  });
}

}  // namespace

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
  if (method == ShiftMethod::fused)
    group_in_channels(source.shape(0), c_out, weight.shape(1), g.groups, "conv2d_decomposed");

  Image<T> y = xt::zeros<T>({c_out, std::size_t(h_out), std::size_t(w_out)});
  if (bias)
    for (std::size_t o = 0; o < c_out; ++o) xt::view(y, o, xt::all(), xt::all()) = (*bias)(o);
  const std::vector<Matrix<T>> slices = kernel_slices(weight);  // W[:, :, p, q] at p K2 + q
  for (int p = 0; p < kernel[0]; ++p)
    for (int q = 0; q < kernel[1]; ++q) {
      const Matrix<T>& w_pq = slices[std::size_t(p * kernel[1] + q)];
      if (method == ShiftMethod::fused) {
        add_fused_tap(source, w_pq, p, q, g, y);
        counter.add("stage1.projection", std::int64_t(c_out) * std::int64_t(weight.shape(1)) *
                                             std::int64_t(source.shape(1)) * std::int64_t(source.shape(2)));
        counter.add("stage2.shift_sum", std::int64_t(c_out) * h_out * w_out);
        continue;
      }
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
