#include "local/neighborhood_attention.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnconv {

int neighborhood_start(int index, int length, int kernel, int dilation) {
  if (!neighborhood_window_fits(length, kernel, dilation) || index < 0 || index >= length)
    throw std::invalid_argument("neighborhood window " + std::to_string(kernel) + " with dilation " +
                                std::to_string(dilation) + " needs an odd window and an axis of at least " +
                                std::to_string(kernel * dilation) + " pixels (got " + std::to_string(length) + ")");
  const int phase = index % dilation, i = index / dilation;
  const int n = (length - phase + dilation - 1) / dilation;  // positions = index mod d
  const int r = kernel / 2;
  const int start = std::max(i - r, 0) + (i + r >= n ? n - i - r - 1 : 0);
  return start * dilation + phase;
}

template <class T>
HeadMaps<T> neighborhood_attention(const HeadMaps<T>& q, const HeadMaps<T>& k, const HeadMaps<T>& v,
                                   const xt::xtensor<T, 3>& rpb, int kernel, int dilation) {
  const std::size_t heads = q.shape(0), height = q.shape(1), width = q.shape(2), d_k = q.shape(3), d_v = v.shape(3);
  const std::size_t table = std::size_t(2 * kernel - 1);
  if (k.shape() != q.shape() || v.shape(0) != heads || v.shape(1) != height || v.shape(2) != width ||
      rpb.shape(0) != heads || rpb.shape(1) != table || rpb.shape(2) != table)
    throw std::invalid_argument("neighborhood_attention: q, k (heads, H, W, D), v (heads, H, W, D_v) and rpb "
                                "(heads, 2K - 1, 2K - 1) disagree");
  HeadMaps<T> out = xt::zeros<T>({heads, height, width, d_v});
  std::vector<T> score(std::size_t(kernel * kernel));
  for (std::size_t h = 0; h < heads; ++h)
    for (int i = 0; i < int(height); ++i)
      for (int j = 0; j < int(width); ++j) {
        const int top = neighborhood_start(i, int(height), kernel, dilation);
        const int left = neighborhood_start(j, int(width), kernel, dilation);
        const auto key = [&](int a, int b) { return std::array<int, 2>{top + a * dilation, left + b * dilation}; };
        T largest = -INFINITY;
        for (int a = 0; a < kernel; ++a)
          for (int b = 0; b < kernel; ++b) {
            const auto [ki, kj] = key(a, b);
            T s = rpb(h, std::size_t((ki - i) / dilation + kernel - 1), std::size_t((kj - j) / dilation + kernel - 1));
            for (std::size_t c = 0; c < d_k; ++c) s += q(h, i, j, c) * k(h, ki, kj, c);
            score[std::size_t(a * kernel + b)] = s;
            largest = std::max(largest, s);
          }
        T total = 0;
        for (T& s : score) total += s = std::exp(s - largest);
        for (int a = 0; a < kernel; ++a)
          for (int b = 0; b < kernel; ++b) {
            const auto [ki, kj] = key(a, b);
            const T weight = score[std::size_t(a * kernel + b)] / total;
            for (std::size_t c = 0; c < d_v; ++c) out(h, i, j, c) += weight * v(h, ki, kj, c);
          }
      }
  return out;
}

template HeadMaps<float> neighborhood_attention(const HeadMaps<float>&, const HeadMaps<float>&, const HeadMaps<float>&,
                                                const xt::xtensor<float, 3>&, int, int);
template HeadMaps<double> neighborhood_attention(const HeadMaps<double>&, const HeadMaps<double>&,
                                                 const HeadMaps<double>&, const xt::xtensor<double, 3>&, int, int);

bool neighborhood_window_fits(int length, int kernel, int dilation) {
  return kernel >= 1 && kernel % 2 == 1 && dilation >= 1 && length >= kernel * dilation;
}

}  // namespace attnconv
