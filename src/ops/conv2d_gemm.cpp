#include "ops/conv2d_gemm.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "ops/padding.hpp"
#include "parallel/threads.hpp"
#include "tensor/gemm.hpp"

namespace attnconv {
namespace {

// The shapes both forms share: xpad is the padded input, c_in counts every input
// channel (a group reads c_in / groups of them, ops/geometry.hpp).
struct Shapes {
  std::size_t groups, c_out, c_in, k1, k2, s1, s2, d1, d2, hp, wp, ho, wo;
};

// Output rows [i0, i1) of a block of block_rows.
struct Rows {
  std::size_t i0, i1;
};
Rows block_of(std::size_t block, std::size_t block_rows, std::size_t ho) {
  return {block * block_rows, std::min(ho, (block + 1) * block_rows)};
}

// Y[:, i, j] = b + sum over taps (p, q) of W[:, :, p, q] xpad[:, i + p d1, j + q d2]. For
// a block of output rows, the right factor of tap (p, q) is the padded input read from
// (i0 + p d1, q d2) on: (C_in x m) with row stride hp wp, where column t is the padded
// pixel t past that start, t = (i - i0) wp + j. Columns j >= wo are the K2 - 1 (times
// d2) columns past an output row: computed and dropped; m stops at the last row's wo,
// so no product reads past a channel's last padded row.
template <class T>
void shifted_products(const Image<T>& xpad, const Kernel<T>& weight, const std::optional<Vector<T>>& bias,
                      const Shapes& s, Image<T>& y) {
  const std::size_t c_out_g = s.c_out / s.groups, c_in_g = s.c_in / s.groups, taps = s.k1 * s.k2;
  // W[o, c, p, q] as one (C_out x C_in/groups) matrix per tap, w_tap[((p K2 + q) C_out + o) C_in/groups + c].
  std::vector<T> w_tap(s.c_out * c_in_g * taps);
  for (std::size_t o = 0; o < s.c_out; ++o)
    for (std::size_t c = 0; c < c_in_g; ++c)
      for (std::size_t p = 0; p < s.k1; ++p)
        for (std::size_t q = 0; q < s.k2; ++q) w_tap[((p * s.k2 + q) * s.c_out + o) * c_in_g + c] = weight(o, c, p, q);
  // Rows per block: a product of about 512 KiB (it stays in cache across the taps), at
  // least one row. Fixed by the shapes alone.
  const std::size_t block_rows =
      std::clamp<std::size_t>((std::size_t(512) << 10) / (sizeof(T) * s.c_out * s.wp), 1, s.ho);
  const std::size_t blocks = (s.ho + block_rows - 1) / block_rows;
  std::vector<std::vector<T>> sums(parallel_threads(blocks));
  parallel_for(blocks, [&](std::size_t block, std::size_t thread) {
    const Rows r = block_of(block, block_rows, s.ho);
    const std::size_t m = (r.i1 - r.i0 - 1) * s.wp + s.wo;
    std::vector<T>& sum = sums[thread];  // (C_out x m)
    sum.resize(s.c_out * m);
    for (std::size_t tap = 0; tap < taps; ++tap) {
      const std::size_t p = tap / s.k2, q = tap % s.k2;
      for (std::size_t gi = 0; gi < s.groups; ++gi)
        gemm(c_out_g, m, c_in_g, w_tap.data() + (tap * s.c_out + gi * c_out_g) * c_in_g, c_in_g,
             &xpad(gi * c_in_g, r.i0 + p * s.d1, q * s.d2), s.hp * s.wp, tap == 0 ? T(0) : T(1),
             sum.data() + gi * c_out_g * m, m);
    }
    for (std::size_t o = 0; o < s.c_out; ++o) {
      const T b = bias ? (*bias)(o) : T(0);
      for (std::size_t i = r.i0; i < r.i1; ++i) {
        const T* from = sum.data() + o * m + (i - r.i0) * s.wp;
        T* to = &y(o, i, 0);
        for (std::size_t j = 0; j < s.wo; ++j) to[j] = b + from[j];
      }
    }
  });
}

// Y[:, block] = b + W cols, cols the block's patches (C_in K1 K2 x m), m = rows wo.
template <class T>
void im2col_products(const Image<T>& xpad, const Kernel<T>& weight, const std::optional<Vector<T>>& bias,
                     const Shapes& s, Image<T>& y) {
  const std::size_t taps = s.c_in * s.k1 * s.k2, hw = s.ho * s.wo;
  for (std::size_t o = 0; o < s.c_out; ++o) std::fill(&y(o, 0, 0), &y(o, 0, 0) + hw, bias ? (*bias)(o) : T(0));
  // Output rows per block: patches of at most 8 MiB, at least one row. Fixed by
  // the shapes alone, so the numbers do not depend on the thread count.
  const std::size_t block_rows = std::clamp<std::size_t>((std::size_t(8) << 20) / (sizeof(T) * taps * s.wo), 1, s.ho);
  const std::size_t blocks = (s.ho + block_rows - 1) / block_rows;
  std::vector<std::vector<T>> cols(parallel_threads(blocks));
  parallel_for(blocks, [&](std::size_t block, std::size_t thread) {
    const Rows r = block_of(block, block_rows, s.ho);
    const std::size_t m = (r.i1 - r.i0) * s.wo;
    std::vector<T>& patches = cols[thread];
    patches.resize(taps * m);
    for (std::size_t c = 0; c < s.c_in; ++c)
      for (std::size_t p = 0; p < s.k1; ++p)
        for (std::size_t q = 0; q < s.k2; ++q) {
          T* row = &patches[((c * s.k1 + p) * s.k2 + q) * m];
          for (std::size_t i = r.i0; i < r.i1; ++i) {
            const T* from = &xpad(c, i * s.s1 + p * s.d1, q * s.d2);
            T* to = row + (i - r.i0) * s.wo;
            for (std::size_t j = 0; j < s.wo; ++j) to[j] = from[j * s.s2];
          }
        }
    // Per group: Y[its outputs, i0 wo : i1 wo] += W[its outputs] (C_out/groups x taps/groups) times
    // its channels' patches (taps/groups x m); W is row-major (o, c, p, q), the patches (c, p, q).
    const std::size_t c_out_g = s.c_out / s.groups, taps_g = taps / s.groups;
    for (std::size_t gi = 0; gi < s.groups; ++gi)
      gemm(c_out_g, m, taps_g, weight.data() + gi * c_out_g * taps_g, taps_g, patches.data() + gi * taps_g * m, m,
           T(1), &y(gi * c_out_g, r.i0, 0), hw);
  });
}

}  // namespace

bool conv2d_gemm_accepts(ConvGemmForm form, const ConvGeometry& g) {
  return form != ConvGemmForm::shifted || (g.stride[0] == 1 && g.stride[1] == 1);
}

ConvGemmForm conv2d_gemm_form(ConvGemmForm form, const ConvGeometry& g, int input_width, int kernel_width) {
  if (form != ConvGemmForm::automatic) return form;
  if (!conv2d_gemm_accepts(ConvGemmForm::shifted, g)) return ConvGemmForm::im2col;
  // The shifted form also computes the d2 (K2 - 1) columns past each output row: worth it
  // while they are at most a quarter of the row (measured: docs/performance.md).
  const int padded = input_width + g.padding.left + g.padding.right;
  const int output = conv_output_size(input_width, g.padding.left, g.padding.right, kernel_width, 1, g.dilation[1]);
  return 4 * (padded - output) <= output ? ConvGemmForm::shifted : ConvGemmForm::im2col;
}

template <class T>
Image<T> conv2d_gemm(const Image<T>& x, const Kernel<T>& weight, const std::optional<Vector<T>>& bias,
                     const ConvGeometry& g, ConvGemmForm form) {
  const std::size_t groups = std::size_t(std::max(g.groups, 1));
  if (weight.shape(1) * groups != x.shape(0) || weight.shape(0) % groups != 0)
    throw std::invalid_argument("conv2d_gemm: channels do not match the weight and groups");
  if (!conv2d_gemm_accepts(form, g)) throw std::invalid_argument("conv2d_gemm: the shifted form needs stride 1");
  const Image<T> xpad = pad(x, g.padding, g.padding_mode);
  const std::size_t k1 = weight.shape(2), k2 = weight.shape(3);
  const int h_out = conv_output_size(int(x.shape(1)), g.padding.top, g.padding.bottom, int(k1), g.stride[0], g.dilation[0]);
  const int w_out = conv_output_size(int(x.shape(2)), g.padding.left, g.padding.right, int(k2), g.stride[1], g.dilation[1]);
  if (h_out <= 0 || w_out <= 0) throw std::invalid_argument("conv2d_gemm: kernel larger than padded input");
  const Shapes s{groups, weight.shape(0), x.shape(0), k1, k2,
                 std::size_t(g.stride[0]), std::size_t(g.stride[1]), std::size_t(g.dilation[0]), std::size_t(g.dilation[1]),
                 xpad.shape(1), xpad.shape(2), std::size_t(h_out), std::size_t(w_out)};
  Image<T> y({s.c_out, s.ho, s.wo});
  if (s.c_in * k1 * k2 == 0 || s.c_out == 0) {
    for (std::size_t o = 0; o < s.c_out; ++o)
      std::fill(&y(o, 0, 0), &y(o, 0, 0) + s.ho * s.wo, bias ? (*bias)(o) : T(0));
    return y;
  }
  if (conv2d_gemm_form(form, g, int(x.shape(2)), int(k2)) == ConvGemmForm::shifted)
    shifted_products(xpad, weight, bias, s, y);
  else
    im2col_products(xpad, weight, bias, s, y);
  return y;
}

template Image<float> conv2d_gemm(const Image<float>&, const Kernel<float>&, const std::optional<Vector<float>>&,
                                  const ConvGeometry&, ConvGemmForm);
template Image<double> conv2d_gemm(const Image<double>&, const Kernel<double>&, const std::optional<Vector<double>>&,
                                   const ConvGeometry&, ConvGemmForm);

}  // namespace attnconv
