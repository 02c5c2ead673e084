// The ACmix attention path, vectorised over output pixels one window offset at
// a time like the reference's nn.Unfold form (docs/design.md, "ACmix module"):
//   score[n, (a,b), i, j] = sum_d (q[n,d,i*s,j*s] * hd^-1/2) * (k_pad[n,d,i*s+a,j*s+b] + pe[d,i*s,j*s] - pe_pad[d,i*s+a,j*s+b])
//   P = softmax over the k_att^2 window;  out[n,d,i,j] = sum_(a,b) P * v_pad[n,d,i*s+a,j*s+b]
// k, v and pe are reflection-padded by k_att // 2.
#include <cmath>
#include <stdexcept>
#include <string>
#include <xtensor/xview.hpp>

#include "acmix/acmix_module.hpp"
#include "acmix/pointwise.hpp"
#include "ops/padding.hpp"

namespace attnconv {

template <class T>
Image<T> acmix_attention_path(const AcmixConfig& config, const AcmixWeights<T>& w, const AcmixStage1<T>& s1,
                              OpCounter& counter) {
  const int height = int(s1.q.shape(1)), width = int(s1.q.shape(2));
  if (!acmix_window_fits(config, height, width))
    throw std::invalid_argument("ACmix attention: heads must divide C_out and the reflection padding k_att // 2 = " +
                                std::to_string(config.kernel_att / 2) + " be smaller than each side of the " +
                                std::to_string(height) + " x " + std::to_string(width) + " map");
  const int heads = config.heads, hd = config.head_dim(), ka = config.kernel_att, s = config.stride;
  const int h_out = config.output_size(height), w_out = config.output_size(width);
  const int p = ka / 2;
  const Padding reflect{p, p, p, p};

  const Image<T> pe = pointwise_conv(position_map<T>(height, width), w.conv_p_weight,
                                     std::optional<Vector<T>>(w.conv_p_bias), counter, "stage2.attention.position");
  const T scaling = T(1) / std::sqrt(T(hd));
  const Image<T> q_scaled = s1.q * scaling;
  const Image<T> k_pad = pad(s1.k, reflect, PaddingMode::reflect);
  const Image<T> v_pad = pad(s1.v, reflect, PaddingMode::reflect);
  const Image<T> pe_pad = pad(pe, reflect, PaddingMode::reflect);

  // Output pixel (i, j) <-> query pixel (i*s, j*s); window offset (a, b) <-> padded pixel (i*s + a, j*s + b).
  const auto rows = [&](int start) { return xt::range(start, start + s * (h_out - 1) + 1, s); };
  const auto cols = [&](int start) { return xt::range(start, start + s * (w_out - 1) + 1, s); };
  const std::size_t window = std::size_t(ka * ka);
  const std::int64_t pixels = std::int64_t(h_out) * w_out;

  Image<T> out({std::size_t(config.out_channels), std::size_t(h_out), std::size_t(w_out)});
  for (int n = 0; n < heads; ++n) {
    xt::xtensor<T, 3> score = xt::zeros<T>({window, std::size_t(h_out), std::size_t(w_out)});
    for (int a = 0; a < ka; ++a)
      for (int b = 0; b < ka; ++b) {
        auto s_ab = xt::view(score, a * ka + b, xt::all(), xt::all());
        for (int d = 0; d < hd; ++d) {
          const int c = n * hd + d;
          s_ab += xt::view(q_scaled, c, rows(0), cols(0)) *
                  (xt::view(k_pad, c, rows(a), cols(b)) + xt::view(pe, d, rows(0), cols(0)) -
                   xt::view(pe_pad, d, rows(a), cols(b)));
        }
        counter.add("stage2.attention.scores", hd * pixels);
      }
    // Softmax over the window (max subtracted for range; the ratio is unchanged).
    const xt::xtensor<T, 2> peak = xt::amax(score, {0});
    xt::xtensor<T, 3> weight = xt::exp(score - xt::view(peak, xt::newaxis(), xt::all(), xt::all()));
    const xt::xtensor<T, 2> total = xt::sum(weight, {0});
    weight /= xt::view(total, xt::newaxis(), xt::all(), xt::all());
    for (int d = 0; d < hd; ++d) {
      const int c = n * hd + d;
      auto out_c = xt::view(out, c, xt::all(), xt::all());
      out_c = xt::zeros<T>({std::size_t(h_out), std::size_t(w_out)});
      for (int a = 0; a < ka; ++a)
        for (int b = 0; b < ka; ++b)
          out_c += xt::view(weight, a * ka + b, xt::all(), xt::all()) * xt::view(v_pad, c, rows(a), cols(b));
    }
    counter.add("stage2.attention.aggregation", std::int64_t(window) * hd * pixels);
  }
  return out;
}

template Image<float> acmix_attention_path(const AcmixConfig&, const AcmixWeights<float>&, const AcmixStage1<float>&,
                                           OpCounter&);
template Image<double> acmix_attention_path(const AcmixConfig&, const AcmixWeights<double>&,
                                            const AcmixStage1<double>&, OpCounter&);

}  // namespace attnconv
