#include "local/window_attention.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace attnconv {
namespace {

// Swin's three img_mask slices of one axis (one slice when that axis has no shift).
int region(int r, int size, int window, int shift) {
  if (shift == 0) return 0;
  return r < size - window ? 0 : r < size - shift ? 1 : 2;
}

std::size_t table_rows(Extent2 window) { return std::size_t((2 * window[0] - 1) * (2 * window[1] - 1)); }

template <class T>
void check_window_shapes(const HeadMaps<T>& q, const HeadMaps<T>& k, const Matrix<T>& table, Extent2 window,
                         Extent2 shift) {
  if (!swin_window_fits(int(q.shape(1)), int(q.shape(2)), window, shift))
      throw std::invalid_argument("Swin window attention: the map (" + std::to_string(q.shape(1)) + " x " +
                                  std::to_string(q.shape(2)) + ") must be a multiple of the window " +
                                  std::to_string(window[0]) + " x " + std::to_string(window[1]) +
                                  " and the shift in [0, window) per axis");
  if (k.shape() != q.shape() || table.shape(0) != table_rows(window) || table.shape(1) != q.shape(0))
    throw std::invalid_argument(
        "Swin window attention: q, k (heads, Hp, Wp, D) and the table ((2 M1 - 1)(2 M2 - 1), heads) disagree");
}

// One query's scores over its window: score[n] for the key at window position
// n = b1 * M2 + b2, with the rolled coordinates of query and key.
template <class T>
void window_scores(const HeadMaps<T>& q, const HeadMaps<T>& k, const Matrix<T>& table, Extent2 m, Extent2 shift,
                   const std::vector<int>& regions, std::size_t h, std::array<int, 2> rolled, std::vector<T>& score) {
  const int hp = int(q.shape(1)), wp = int(q.shape(2));
  const std::array<int, 2> corner{rolled[0] / m[0] * m[0], rolled[1] / m[1] * m[1]};
  const std::array<int, 2> a{rolled[0] - corner[0], rolled[1] - corner[1]};
  const int qi = (rolled[0] + shift[0]) % hp, qj = (rolled[1] + shift[1]) % wp;
  for (int b1 = 0; b1 < m[0]; ++b1)
    for (int b2 = 0; b2 < m[1]; ++b2) {
      const int r1 = corner[0] + b1, r2 = corner[1] + b2;
      const int ki = (r1 + shift[0]) % hp, kj = (r2 + shift[1]) % wp;
      T s = table(std::size_t(swin_bias_index(m, a, {b1, b2})), h);
      for (std::size_t c = 0; c < q.shape(3); ++c) s += q(h, qi, qj, c) * k(h, ki, kj, c);
      if (regions[std::size_t(rolled[0] * wp + rolled[1])] != regions[std::size_t(r1 * wp + r2)]) s += T(swin_mask_value);
      score[std::size_t(b1 * m[1] + b2)] = s;
    }
}

template <class T> void softmax(std::vector<T>& score) {
  const T largest = *std::max_element(score.begin(), score.end());
  T total = 0;
  for (T& s : score) total += s = std::exp(s - largest);
  for (T& s : score) s /= total;
}

}  // namespace

int swin_bias_index(Extent2 window, std::array<int, 2> a, std::array<int, 2> b) {
  return (a[0] - b[0] + window[0] - 1) * (2 * window[1] - 1) + (a[1] - b[1] + window[1] - 1);
}

bool swin_window_fits(int height, int width, Extent2 window, Extent2 shift) {
  const std::array<int, 2> sides{height, width};
  for (std::size_t axis = 0; axis < 2; ++axis)
    if (window[axis] < 1 || shift[axis] < 0 || shift[axis] >= window[axis] || sides[axis] % window[axis] != 0)
      return false;
  return true;
}
bool swin_window_fits(int height, int width, int window, int shift) {
  return swin_window_fits(height, width, Extent2{window, window}, Extent2{shift, shift});
}

int swin_bias_index(int window, std::array<int, 2> a, std::array<int, 2> b) {
  return swin_bias_index(Extent2{window, window}, a, b);
}

std::vector<int> swin_regions(int height, int width, Extent2 window, Extent2 shift) {
  std::vector<int> labels(std::size_t(height * width), 0);
  for (int r1 = 0; r1 < height; ++r1)
    for (int r2 = 0; r2 < width; ++r2)
      labels[std::size_t(r1 * width + r2)] =
          3 * region(r1, height, window[0], shift[0]) + region(r2, width, window[1], shift[1]);
  return labels;
}
std::vector<int> swin_regions(int height, int width, int window, int shift) {
  return swin_regions(height, width, Extent2{window, window}, Extent2{shift, shift});
}

template <class T>
HeadMaps<T> swin_window_attention(const HeadMaps<T>& q, const HeadMaps<T>& k, const HeadMaps<T>& v,
                                  const Matrix<T>& table, Extent2 window, Extent2 shift) {
  check_window_shapes(q, k, table, window, shift);
  const std::size_t heads = q.shape(0), d_v = v.shape(3);
  const int hp = int(q.shape(1)), wp = int(q.shape(2)), m1 = window[0], m2 = window[1], n = m1 * m2;
  if (v.shape(0) != heads || v.shape(1) != q.shape(1) || v.shape(2) != q.shape(2))
    throw std::invalid_argument("Swin window attention: v must be (heads, Hp, Wp, D_v)");
  const std::vector<int> regions = swin_regions(hp, wp, window, shift);
  HeadMaps<T> out = xt::zeros<T>({heads, q.shape(1), q.shape(2), d_v});
  // One window at a time: its N x N attention matrix, then P V.
  std::vector<std::vector<T>> attention(std::size_t(n), std::vector<T>(std::size_t(n), T(0)));
  for (std::size_t h = 0; h < heads; ++h)
    for (int w1 = 0; w1 < hp; w1 += m1)
      for (int w2 = 0; w2 < wp; w2 += m2) {
        for (int a = 0; a < n; ++a) {
          window_scores(q, k, table, window, shift, regions, h, {w1 + a / m2, w2 + a % m2}, attention[std::size_t(a)]);
          softmax(attention[std::size_t(a)]);
        }
        for (int a = 0; a < n; ++a) {
          const int qi = (w1 + a / m2 + shift[0]) % hp, qj = (w2 + a % m2 + shift[1]) % wp;
          for (int b = 0; b < n; ++b) {
            const int ki = (w1 + b / m2 + shift[0]) % hp, kj = (w2 + b % m2 + shift[1]) % wp;
            for (std::size_t c = 0; c < d_v; ++c) out(h, qi, qj, c) += attention[std::size_t(a)][std::size_t(b)] * v(h, ki, kj, c);
          }
        }
      }
  return out;
}
template <class T>
HeadMaps<T> swin_window_attention(const HeadMaps<T>& q, const HeadMaps<T>& k, const HeadMaps<T>& v,
                                  const Matrix<T>& table, int window, int shift) {
  return swin_window_attention(q, k, v, table, Extent2{window, window}, Extent2{shift, shift});
}

template <class T>
xt::xtensor<T, 5> swin_attention_weights(const HeadMaps<T>& q, const HeadMaps<T>& k, const Matrix<T>& table,
                                         Extent2 window, Extent2 shift) {
  check_window_shapes(q, k, table, window, shift);
  const std::size_t heads = q.shape(0);
  const int hp = int(q.shape(1)), wp = int(q.shape(2)), m1 = window[0], m2 = window[1];
  const std::vector<int> regions = swin_regions(hp, wp, window, shift);
  xt::xtensor<T, 5> weights =
      xt::zeros<T>({heads, q.shape(1), q.shape(2), std::size_t(2 * m1 - 1), std::size_t(2 * m2 - 1)});
  std::vector<T> score(std::size_t(m1 * m2));
  for (std::size_t h = 0; h < heads; ++h)
    for (int i = 0; i < hp; ++i)
      for (int j = 0; j < wp; ++j) {
        const std::array<int, 2> rolled{(i - shift[0] + hp) % hp, (j - shift[1] + wp) % wp};
        window_scores(q, k, table, window, shift, regions, h, rolled, score);
        softmax(score);
        const int a1 = rolled[0] % m1, a2 = rolled[1] % m2;  // delta = b - a
        for (int b1 = 0; b1 < m1; ++b1)
          for (int b2 = 0; b2 < m2; ++b2)
            weights(h, i, j, std::size_t(b1 - a1 + m1 - 1), std::size_t(b2 - a2 + m2 - 1)) =
                score[std::size_t(b1 * m2 + b2)];
      }
  return weights;
}
template <class T>
xt::xtensor<T, 5> swin_attention_weights(const HeadMaps<T>& q, const HeadMaps<T>& k, const Matrix<T>& table,
                                         int window, int shift) {
  return swin_attention_weights(q, k, table, Extent2{window, window}, Extent2{shift, shift});
}

template <class T> HeadMaps<T> locally_connected(const xt::xtensor<T, 5>& weights, const HeadMaps<T>& v) {
  const std::size_t heads = v.shape(0), d_v = v.shape(3);
  const int hp = int(v.shape(1)), wp = int(v.shape(2));
  const int span1 = int(weights.shape(3)), span2 = int(weights.shape(4)), reach1 = span1 / 2, reach2 = span2 / 2;
  HeadMaps<T> out = xt::zeros<T>(v.shape());
  for (std::size_t h = 0; h < heads; ++h)
    for (int i = 0; i < hp; ++i)
      for (int j = 0; j < wp; ++j)
        for (int e1 = 0; e1 < span1; ++e1)
          for (int e2 = 0; e2 < span2; ++e2) {
            const T w = weights(h, i, j, std::size_t(e1), std::size_t(e2));
            if (w == T(0)) continue;  // outside the window: adds an exact zero
            const int ki = ((i + e1 - reach1) % hp + hp) % hp, kj = ((j + e2 - reach2) % wp + wp) % wp;
            for (std::size_t c = 0; c < d_v; ++c) out(h, i, j, c) += w * v(h, ki, kj, c);
          }
  return out;
}

template HeadMaps<float> swin_window_attention(const HeadMaps<float>&, const HeadMaps<float>&, const HeadMaps<float>&,
                                               const Matrix<float>&, Extent2, Extent2);
template HeadMaps<float> swin_window_attention(const HeadMaps<float>&, const HeadMaps<float>&, const HeadMaps<float>&,
                                               const Matrix<float>&, int, int);
template xt::xtensor<float, 5> swin_attention_weights(const HeadMaps<float>&, const HeadMaps<float>&, const Matrix<float>&, Extent2,
                                                     Extent2);
template xt::xtensor<float, 5> swin_attention_weights(const HeadMaps<float>&, const HeadMaps<float>&, const Matrix<float>&, int, int);
template HeadMaps<float> locally_connected(const xt::xtensor<float, 5>&, const HeadMaps<float>&);
template HeadMaps<double> swin_window_attention(const HeadMaps<double>&, const HeadMaps<double>&, const HeadMaps<double>&,
                                               const Matrix<double>&, Extent2, Extent2);
template HeadMaps<double> swin_window_attention(const HeadMaps<double>&, const HeadMaps<double>&, const HeadMaps<double>&,
                                               const Matrix<double>&, int, int);
template xt::xtensor<double, 5> swin_attention_weights(const HeadMaps<double>&, const HeadMaps<double>&, const Matrix<double>&, Extent2,
                                                     Extent2);
template xt::xtensor<double, 5> swin_attention_weights(const HeadMaps<double>&, const HeadMaps<double>&, const Matrix<double>&, int, int);
template HeadMaps<double> locally_connected(const xt::xtensor<double, 5>&, const HeadMaps<double>&);

}  // namespace attnconv
