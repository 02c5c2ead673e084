#include "reference/window_rules.hpp"

#include <algorithm>
#include <stdexcept>

namespace attnconv::reference {
namespace {

// Whether key k is among the K pixels of i's residue class mod d nearest to i, clamped in [0, L).
bool in_neighborhood(int i, int k, int length, int kernel, int dilation) {
  if (k % dilation != i % dilation) return false;
  int n = 0;  // the pixels of the class
  for (int p = i % dilation; p < length; p += dilation) ++n;
  const int c0 = std::clamp(i / dilation - kernel / 2, 0, n - kernel);
  return k / dilation >= c0 && k / dilation < c0 + kernel;
}

// Swin's img_mask region of rolled position r along an axis of L pixels.
int region(int r, int length, int window, int shift) { return r < length - window ? 0 : r < length - shift ? 1 : 2; }

// ReflectionPad's source of padded position p along an axis of L pixels (L > |p| and p < 2L - 1).
int reflected(int p, int length) { return p < 0 ? -p : p >= length ? 2 * (length - 1) - p : p; }

// How many window offsets a in [0, K) reach key k from query q: reflected(q + a - K / 2) = k.
int reach_count(int q, int k, int length, int kernel) {
  int count = 0;
  for (int a = 0; a < kernel; ++a) count += reflected(q + a - kernel / 2, length) == k;
  return count;
}

}  // namespace

template <class T>
WindowRule neighborhood_window(const xt::xtensor<T, 3>& rpb, int height, int width, int kernel, int dilation) {
  if (kernel % 2 == 0 || height < kernel * dilation || width < kernel * dilation)
    throw std::invalid_argument("reference::neighborhood_window: an odd window and sides of at least K d");
  return [&rpb, height, width, kernel, dilation](std::size_t h, std::size_t query, std::size_t key) {
    const int i1 = int(query) / width, i2 = int(query) % width, k1 = int(key) / width, k2 = int(key) % width;
    if (!in_neighborhood(i1, k1, height, kernel, dilation) || !in_neighborhood(i2, k2, width, kernel, dilation))
      return KeyInWindow{};
    return KeyInWindow{1, Real(rpb(h, std::size_t((k1 - i1) / dilation + kernel - 1),
                                   std::size_t((k2 - i2) / dilation + kernel - 1)))};
  };
}

template <class T> WindowRule swin_window(const Matrix<T>& table, int height, int width, int window, int shift) {
  return [&table, height, width, window, shift](std::size_t h, std::size_t query, std::size_t key) {
    const int m = window;
    const int r1 = (int(query) / width - shift + height) % height, r2 = (int(query) % width - shift + width) % width;
    const int t1 = (int(key) / width - shift + height) % height, t2 = (int(key) % width - shift + width) % width;
    if (r1 / m != t1 / m || r2 / m != t2 / m) return KeyInWindow{};
    Real bias = Real(table(std::size_t((r1 % m - t1 % m + m - 1) * (2 * m - 1) + (r2 % m - t2 % m + m - 1)), h));
    if (shift > 0 && (region(r1, height, m, shift) != region(t1, height, m, shift) ||
                      region(r2, width, m, shift) != region(t2, width, m, shift)))
      bias += -100;
    return KeyInWindow{1, bias};
  };
}

template <class T>
WindowRule acmix_window(const xt::xtensor<T, 3>& query, const Image<T>& pe, int kernel, int stride) {
  const int height = int(pe.shape(1)), width = int(pe.shape(2)), w_out = (width + stride - 1) / stride;
  if (kernel / 2 >= height || kernel / 2 >= width)
    throw std::invalid_argument("reference::acmix_window: the reflection needs K / 2 smaller than each side");
  return [&query, &pe, height, width, w_out, kernel, stride](std::size_t h, std::size_t i, std::size_t key) {
    const int q1 = int(i) / w_out * stride, q2 = int(i) % w_out * stride;
    const int k1 = int(key) / width, k2 = int(key) % width;
    const int multiplicity = reach_count(q1, k1, height, kernel) * reach_count(q2, k2, width, kernel);
    if (multiplicity == 0) return KeyInWindow{};
    Real bias = 0;
    for (std::size_t d = 0; d < pe.shape(0); ++d)
      bias += Real(query(h, i, d)) * (Real(pe(d, q1, q2)) - Real(pe(d, k1, k2)));
    return KeyInWindow{multiplicity, bias};
  };
}

template WindowRule neighborhood_window(const xt::xtensor<float, 3>&, int, int, int, int);
template WindowRule neighborhood_window(const xt::xtensor<double, 3>&, int, int, int, int);
template WindowRule swin_window(const Matrix<float>&, int, int, int, int);
template WindowRule swin_window(const Matrix<double>&, int, int, int, int);
template WindowRule acmix_window(const xt::xtensor<float, 3>&, const Image<float>&, int, int);
template WindowRule acmix_window(const xt::xtensor<double, 3>&, const Image<double>&, int, int);

}  // namespace attnconv::reference
