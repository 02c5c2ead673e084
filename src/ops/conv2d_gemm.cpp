#include "ops/conv2d_gemm.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "ops/padding.hpp"
#include "parallel/threads.hpp"
#include "tensor/gemm.hpp"

namespace attnconv {

template <class T>
Image<T> conv2d_gemm(const Image<T>& x, const Kernel<T>& weight, const std::optional<Vector<T>>& bias,
                     const ConvGeometry& g) {
  const std::size_t groups = std::size_t(std::max(g.groups, 1));
  if (weight.shape(1) * groups != x.shape(0) || weight.shape(0) % groups != 0)
    throw std::invalid_argument("conv2d_gemm: channels do not match the weight and groups");
  const Image<T> xpad = pad(x, g.padding, g.padding_mode);
  // c_in counts every input channel; a group reads c_in / groups of them (ops/geometry.hpp).
  const std::size_t c_out = weight.shape(0), c_in = x.shape(0), k1 = weight.shape(2), k2 = weight.shape(3);
  const std::size_t s1 = std::size_t(g.stride[0]), s2 = std::size_t(g.stride[1]);
  const std::size_t d1 = std::size_t(g.dilation[0]), d2 = std::size_t(g.dilation[1]);
  const int h_out = conv_output_size(int(x.shape(1)), g.padding.top, g.padding.bottom, int(k1), int(s1), int(d1));
  const int w_out = conv_output_size(int(x.shape(2)), g.padding.left, g.padding.right, int(k2), int(s2), int(d2));
  if (h_out <= 0 || w_out <= 0) throw std::invalid_argument("conv2d_gemm: kernel larger than padded input");
  const std::size_t ho = std::size_t(h_out), wo = std::size_t(w_out), taps = c_in * k1 * k2;

  Image<T> y({c_out, ho, wo});
  for (std::size_t o = 0; o < c_out; ++o) std::fill(&y(o, 0, 0), &y(o, 0, 0) + ho * wo, bias ? (*bias)(o) : T(0));
  if (taps == 0 || c_out == 0) return y;
  // Output rows per block: patches of at most 8 MiB, at least one row. Fixed by
  // the shapes alone, so the numbers do not depend on the thread count.
  const std::size_t block_rows = std::clamp<std::size_t>((std::size_t(8) << 20) / (sizeof(T) * taps * wo), 1, ho);
  const std::size_t blocks = (ho + block_rows - 1) / block_rows;
  std::vector<std::vector<T>> cols(parallel_threads(blocks));
  parallel_for(blocks, [&](std::size_t block, std::size_t thread) {
    const std::size_t i0 = block * block_rows, i1 = std::min(ho, i0 + block_rows), m = (i1 - i0) * wo;
    std::vector<T>& patches = cols[thread];
    patches.resize(taps * m);
    for (std::size_t c = 0; c < c_in; ++c)
      for (std::size_t p = 0; p < k1; ++p)
        for (std::size_t q = 0; q < k2; ++q) {
          T* row = &patches[((c * k1 + p) * k2 + q) * m];
          for (std::size_t i = i0; i < i1; ++i) {
            const T* from = &xpad(c, i * s1 + p * d1, q * d2);
            T* to = row + (i - i0) * wo;
            for (std::size_t j = 0; j < wo; ++j) to[j] = from[j * s2];
          }
        }
    // Per group: Y[its outputs, i0 wo : i1 wo] += W[its outputs] (C_out/groups x taps/groups) times
    // its channels' patches (taps/groups x m); W is row-major (o, c, p, q), the patches (c, p, q).
    const std::size_t c_out_g = c_out / groups, taps_g = taps / groups;
    for (std::size_t gi = 0; gi < groups; ++gi)
      gemm(c_out_g, m, taps_g, weight.data() + gi * c_out_g * taps_g, taps_g, patches.data() + gi * taps_g * m, m,
           T(1), &y(gi * c_out_g, i0, 0), ho * wo);
  });
  return y;
}

template Image<float> conv2d_gemm(const Image<float>&, const Kernel<float>&, const std::optional<Vector<float>>&,
                                  const ConvGeometry&);
template Image<double> conv2d_gemm(const Image<double>&, const Kernel<double>&, const std::optional<Vector<double>>&,
                                   const ConvGeometry&);

}  // namespace attnconv
