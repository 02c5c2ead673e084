#include "reference/neighborhood_attention.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace attnconv::reference {

bool is_neighbor(int index, int key, int length, const NeighborhoodAxis& axis) {
  const int w = axis.window, s = axis.stride, d = axis.dilation;
  if (key % d != index % d) return false;
  const int n = (length - index % d + d - 1) / d, i = index / d, kk = key / d;
  if (axis.causal) {
    const int leader = std::min(i / s * s + s - 1, n - 1);
    return kk <= i && leader - kk < w;
  }
  const int leader = std::min(i / s * s + s / 2, n - 1);
  const int centre = std::clamp(leader, window_left(w), n - 1 - window_right(w));
  return -window_left(w) <= kk - centre && kk - centre <= window_right(w);
}

template <class T>
HeadMaps<T> neighborhood_attention(const HeadMaps<T>& q, const HeadMaps<T>& k, const HeadMaps<T>& v,
                                   const xt::xtensor<T, 3>& rpb, const Neighborhood& axes) {
  using Real = long double;
  const int heads = int(q.shape(0)), height = int(q.shape(1)), width = int(q.shape(2));
  const int d_k = int(q.shape(3)), d_v = int(v.shape(3));
  HeadMaps<T> out = xt::zeros<T>({q.shape(0), q.shape(1), q.shape(2), v.shape(3)});
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < height; ++i)
      for (int j = 0; j < width; ++j) {
        std::vector<std::array<int, 2>> keys;
        std::vector<Real> score;
        for (int ki = 0; ki < height; ++ki)
          for (int kj = 0; kj < width; ++kj) {
            if (!is_neighbor(i, ki, height, axes[0]) || !is_neighbor(j, kj, width, axes[1])) continue;
            Real s = 0;
            for (int c = 0; c < d_k; ++c) s += Real(q(h, i, j, c)) * Real(k(h, ki, kj, c));
            if (rpb.size() > 0)
              s += Real(rpb(h, (ki - i) / axes[0].dilation + axes[0].window - 1,
                            (kj - j) / axes[1].dilation + axes[1].window - 1));
            keys.push_back({ki, kj});
            score.push_back(s);
          }
        const Real largest = *std::max_element(score.begin(), score.end());
        Real total = 0;
        for (Real& s : score) total += s = std::exp(s - largest);
        for (int c = 0; c < d_v; ++c) {
          Real sum = 0;
          for (std::size_t n = 0; n < keys.size(); ++n) sum += score[n] / total * Real(v(h, keys[n][0], keys[n][1], c));
          out(h, i, j, c) = T(sum);
        }
      }
  return out;
}

template HeadMaps<float> neighborhood_attention(const HeadMaps<float>&, const HeadMaps<float>&, const HeadMaps<float>&,
                                                const xt::xtensor<float, 3>&, const Neighborhood&);
template HeadMaps<double> neighborhood_attention(const HeadMaps<double>&, const HeadMaps<double>&,
                                                 const HeadMaps<double>&, const xt::xtensor<double, 3>&,
                                                 const Neighborhood&);

}  // namespace attnconv::reference
