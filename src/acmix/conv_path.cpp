// The ACmix convolution path (docs/design.md, "ACmix module"; fixture README items 7-8):
//   F_j[d] = proj_t[n*hd + d],  j = t*N + n  (t = 0, 1, 2 for q, k, v)
//   f[d*k^2 + kk] = sum_j fc[kk, j] F_j[d]                    (one matrix product)
//   out = dep_conv(f): groups = head_dim, padding k_conv // 2 (zeros), stride s;
//   output channel o reads head_dim index o // N.
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

#include "acmix/acmix_module.hpp"
#include "acmix/grouped_conv.hpp"

namespace attnconv {

template <class T>
Image<T> acmix_conv_path(const AcmixConfig& config, const AcmixWeights<T>& w, const AcmixStage1<T>& s1,
                         OpCounter& counter) {
  const std::size_t height = s1.q.shape(1), width = s1.q.shape(2), pixels = height * width;
  const std::size_t heads = std::size_t(config.heads), hd = std::size_t(config.head_dim());
  const std::size_t k2 = std::size_t(config.kernel_conv * config.kernel_conv);

  // The 3N head maps, row j = t*N + n, each (hd, H, W) flattened.
  Matrix<T> stacked({3 * heads, hd * pixels});
  const Image<T>* maps[3] = {&s1.q, &s1.k, &s1.v};
  for (std::size_t t = 0; t < 3; ++t)
    for (std::size_t n = 0; n < heads; ++n) {
      const auto block = xt::view(*maps[t], xt::range(n * hd, (n + 1) * hd), xt::all(), xt::all());
      xt::view(stacked, t * heads + n, xt::all()) = xt::flatten(block);
    }
  const Matrix<T> mixed = xt::linalg::dot(w.fc_weight, stacked);  // (k^2, hd * H * W)
  counter.add("stage2.conv.fc", std::int64_t(k2 * 3 * heads * hd * pixels));

  Image<T> f({hd * k2, height, width});  // channel d*k^2 + kk (the reference's permute)
  for (std::size_t d = 0; d < hd; ++d)
    for (std::size_t kk = 0; kk < k2; ++kk)
      xt::view(f, d * k2 + kk, xt::all(), xt::all()) =
          xt::reshape_view(xt::view(mixed, kk, xt::range(d * pixels, (d + 1) * pixels)), {height, width});

  const int pad = config.kernel_conv / 2;
  ConvGeometry geometry;
  geometry.padding = {pad, pad, pad, pad};
  geometry.stride = {config.stride, config.stride};
  return grouped_conv2d(f, w.dep_conv_weight, w.dep_conv_bias, int(hd), geometry, counter, "stage2.conv.dep_conv");
}

template Image<float> acmix_conv_path(const AcmixConfig&, const AcmixWeights<float>&, const AcmixStage1<float>&,
                                      OpCounter&);
template Image<double> acmix_conv_path(const AcmixConfig&, const AcmixWeights<double>&, const AcmixStage1<double>&,
                                       OpCounter&);

}  // namespace attnconv
