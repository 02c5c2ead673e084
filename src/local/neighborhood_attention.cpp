#include "local/neighborhood_attention.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnconv {

int window_left(int w) { return w / 2; }
int window_right(int w) { return w / 2 + w % 2 - 1; }

AxisKeys neighborhood_keys(int index, int length, const NeighborhoodAxis& axis) {
  const int w = axis.window, s = axis.stride, d = axis.dilation;
  if (w < 1 || s < 1 || s > w || d < 1 || length < w * d || index < 0 || index >= length)
    throw std::invalid_argument("neighborhood window " + std::to_string(w) + " with stride " + std::to_string(s) +
                                " and dilation " + std::to_string(d) + " needs 1 <= stride <= window and an axis of "
                                "at least window * dilation = " + std::to_string(w * d) + " pixels (got " +
                                std::to_string(length) + ", query " + std::to_string(index) + ")");
  const int phase = index % d, i = index / d;
  const int n = (length - phase + d - 1) / d;  // the positions = index mod d
  const int group = i / s * s;
  if (axis.causal) {
    const int leader = std::min(group + s - 1, n - 1);
    const int start = std::max(leader - w + 1, 0);
    return {start * d + phase, i + 1 - start};
  }
  const int leader = std::min(group + s / 2, n - 1);
  const int start = std::max(leader - window_left(w), 0) +
                    (leader + window_right(w) >= n ? n - window_right(w) - leader - 1 : 0);
  return {start * d + phase, w};
}

int neighborhood_start(int index, int length, int kernel, int dilation) {
  if (!neighborhood_window_fits(length, kernel, dilation))
    throw std::invalid_argument("neighborhood_start: the window " + std::to_string(kernel) + " with dilation " +
                                std::to_string(dilation) + " needs an odd window and an axis of at least " +
                                std::to_string(kernel * dilation) + " pixels (got " + std::to_string(length) + ")");
  return neighborhood_keys(index, length, {.window = kernel, .stride = 1, .dilation = dilation}).first;
}

template <class T>
HeadMaps<T> neighborhood_attention(const HeadMaps<T>& q, const HeadMaps<T>& k, const HeadMaps<T>& v,
                                   const xt::xtensor<T, 3>& rpb, const Neighborhood& axes) {
  const std::size_t heads = q.shape(0), height = q.shape(1), width = q.shape(2), d_k = q.shape(3), d_v = v.shape(3);
  const bool biased = rpb.size() > 0;
  if (k.shape() != q.shape() || v.shape(0) != heads || v.shape(1) != height || v.shape(2) != width ||
      (biased && (rpb.shape(0) != heads || rpb.shape(1) != std::size_t(2 * axes[0].window - 1) ||
                  rpb.shape(2) != std::size_t(2 * axes[1].window - 1))))
    throw std::invalid_argument("neighborhood_attention: q, k (heads, H, W, D), v (heads, H, W, D_v) and rpb "
                                "(heads, 2 w1 - 1, 2 w2 - 1) or no rpb disagree");
  const int d1 = axes[0].dilation, d2 = axes[1].dilation, w1 = axes[0].window, w2 = axes[1].window;
  HeadMaps<T> out = xt::zeros<T>({heads, height, width, d_v});
  std::vector<T> score(std::size_t(w1 * w2));
  for (int i = 0; i < int(height); ++i) {
    const AxisKeys rows = neighborhood_keys(i, int(height), axes[0]);
    for (int j = 0; j < int(width); ++j) {
      const AxisKeys cols = neighborhood_keys(j, int(width), axes[1]);
      for (std::size_t h = 0; h < heads; ++h) {
        T largest = -INFINITY;
        for (int a = 0; a < rows.count; ++a)
          for (int b = 0; b < cols.count; ++b) {
            const int ki = rows.first + a * d1, kj = cols.first + b * d2;
            T s = biased ? rpb(h, std::size_t((ki - i) / d1 + w1 - 1), std::size_t((kj - j) / d2 + w2 - 1)) : T(0);
            for (std::size_t c = 0; c < d_k; ++c) s += q(h, i, j, c) * k(h, ki, kj, c);
            score[std::size_t(a * cols.count + b)] = s;
            largest = std::max(largest, s);
          }
        T total = 0;
        for (int n = 0; n < rows.count * cols.count; ++n) total += score[std::size_t(n)] = std::exp(score[std::size_t(n)] - largest);
        for (int a = 0; a < rows.count; ++a)
          for (int b = 0; b < cols.count; ++b) {
            const int ki = rows.first + a * d1, kj = cols.first + b * d2;
            const T weight = score[std::size_t(a * cols.count + b)] / total;
            for (std::size_t c = 0; c < d_v; ++c) out(h, i, j, c) += weight * v(h, ki, kj, c);
          }
      }
    }
  }
  return out;
}

template <class T>
HeadMaps<T> neighborhood_attention(const HeadMaps<T>& q, const HeadMaps<T>& k, const HeadMaps<T>& v,
                                   const xt::xtensor<T, 3>& rpb, int kernel, int dilation) {
  if (kernel % 2 == 0)
    throw std::invalid_argument("neighborhood_attention: NATTEN 0.17's window " + std::to_string(kernel) +
                                " must be odd");
  const NeighborhoodAxis axis{.window = kernel, .stride = 1, .dilation = dilation};
  return neighborhood_attention(q, k, v, rpb, Neighborhood{axis, axis});
}

template HeadMaps<float> neighborhood_attention(const HeadMaps<float>&, const HeadMaps<float>&, const HeadMaps<float>&,
                                                const xt::xtensor<float, 3>&, const Neighborhood&);
template HeadMaps<double> neighborhood_attention(const HeadMaps<double>&, const HeadMaps<double>&,
                                                 const HeadMaps<double>&, const xt::xtensor<double, 3>&,
                                                 const Neighborhood&);
template HeadMaps<float> neighborhood_attention(const HeadMaps<float>&, const HeadMaps<float>&, const HeadMaps<float>&,
                                                const xt::xtensor<float, 3>&, int, int);
template HeadMaps<double> neighborhood_attention(const HeadMaps<double>&, const HeadMaps<double>&,
                                                 const HeadMaps<double>&, const xt::xtensor<double, 3>&, int, int);

bool neighborhood_window_fits(int length, int kernel, int dilation) {
  return kernel >= 1 && kernel % 2 == 1 && dilation >= 1 && length >= kernel * dilation;
}

}  // namespace attnconv
