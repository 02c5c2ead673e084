#include "construction/nearest_convolution.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "construction/theorem1.hpp"

namespace attnconv {

template <class T>
Kernel<T> equivalent_kernel(const OffsetWeights<T>& p, const xt::xtensor<T, 3>& w_val, const Matrix<T>& w_out) {
  const std::size_t heads = p.shape(0), r1 = p.shape(1), r2 = p.shape(2);
  const std::size_t d_in = w_val.shape(1), d_h = w_val.shape(2), d_out = w_out.shape(1);
  if (w_val.shape(0) != heads || w_out.shape(0) != heads * d_h)
    throw std::invalid_argument("equivalent_kernel: attention of " + std::to_string(heads) + " heads, w_val (" +
                                std::to_string(w_val.shape(0)) + ", " + std::to_string(d_in) + ", " +
                                std::to_string(d_h) + "), w_out has " + std::to_string(w_out.shape(0)) + " rows");
  // M_h = W_val^h W_out^h (D_in x D_out), in double.
  xt::xtensor<double, 3> m = xt::zeros<double>({heads, d_in, d_out});
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t c = 0; c < d_in; ++c)
      for (std::size_t o = 0; o < d_out; ++o) {
        double s = 0;
        for (std::size_t d = 0; d < d_h; ++d) s += double(w_val(h, c, d)) * double(w_out(h * d_h + d, o));
        m(h, c, o) = s;
      }
  Kernel<T> w_eff({d_out, d_in, r1, r2});
  for (std::size_t o = 0; o < d_out; ++o)
    for (std::size_t c = 0; c < d_in; ++c)
      for (std::size_t a = 0; a < r1; ++a)
        for (std::size_t b = 0; b < r2; ++b) {
          double s = 0;
          for (std::size_t h = 0; h < heads; ++h) s += double(p(h, a, b)) * m(h, c, o);
          w_eff(o, c, a, b) = T(s);
        }
  return w_eff;
}

bool OffsetWindow::contains(std::array<int, 2> delta) const {
  return delta[0] >= first[0] && delta[0] <= last[0] && delta[1] >= first[1] && delta[1] <= last[1];
}

OffsetWindow kernel_window(std::array<int, 2> kernel) {
  const auto c = kernel_center(kernel);
  return {.first = {-c[0], -c[1]}, .last = {kernel[0] - 1 - c[0], kernel[1] - 1 - c[1]}};
}

namespace {

// Whether the window of `kernel` lies within the offsets [-origin, extent - 1 - origin].
bool window_fits(std::array<int, 2> kernel, std::array<int, 2> origin, std::array<std::size_t, 2> extent) {
  const OffsetWindow w = kernel_window(kernel);
  for (int axis = 0; axis < 2; ++axis)
    if (origin[axis] + w.first[axis] < 0 || origin[axis] + w.last[axis] >= int(extent[axis])) return false;
  return true;
}

// P_h(delta), 0 for an offset outside the array.
template <class T> double weight_at(const OffsetWeights<T>& p, std::size_t h, std::array<int, 2> origin, std::array<int, 2> delta) {
  const int a = origin[0] + delta[0], b = origin[1] + delta[1];
  if (a < 0 || b < 0 || a >= int(p.shape(1)) || b >= int(p.shape(2))) return 0;
  return double(p(h, std::size_t(a), std::size_t(b)));
}

// Mass of head h on the window, from a 2D prefix sum S (S[a][b] = sum of p(h, <a, <b)).
double window_mass(const xt::xtensor<double, 2>& prefix, std::array<int, 2> origin, const OffsetWindow& w) {
  const std::size_t a0 = std::size_t(origin[0] + w.first[0]), a1 = std::size_t(origin[0] + w.last[0] + 1);
  const std::size_t b0 = std::size_t(origin[1] + w.first[1]), b1 = std::size_t(origin[1] + w.last[1] + 1);
  return prefix(a1, b1) - prefix(a0, b1) - prefix(a1, b0) + prefix(a0, b0);
}

}  // namespace

template <class T> Kernel<T> window_kernel(const Kernel<T>& w_eff, std::array<int, 2> origin, std::array<int, 2> kernel) {
  if (!window_fits(kernel, origin, {w_eff.shape(2), w_eff.shape(3)}))
    throw std::invalid_argument("window_kernel: the " + std::to_string(kernel[0]) + "x" + std::to_string(kernel[1]) +
                                " window does not fit the offsets around the query");
  const OffsetWindow w = kernel_window(kernel);
  Kernel<T> out({w_eff.shape(0), w_eff.shape(1), std::size_t(kernel[0]), std::size_t(kernel[1])});
  for (std::size_t o = 0; o < out.shape(0); ++o)
    for (std::size_t c = 0; c < out.shape(1); ++c)
      for (int p = 0; p < kernel[0]; ++p)
        for (int q = 0; q < kernel[1]; ++q)
          out(o, c, std::size_t(p), std::size_t(q)) =
              w_eff(o, c, std::size_t(origin[0] + w.first[0] + p), std::size_t(origin[1] + w.first[1] + q));
  return out;
}

template <class T>
std::vector<HeadTap> head_taps(const OffsetWeights<T>& p, std::array<int, 2> origin, const Matrix<double>& centers,
                               std::array<int, 2> kernel) {
  if (centers.shape(0) != p.shape(0) || centers.shape(1) != 2)
    throw std::invalid_argument("head_taps: one centre (row, column) per head is needed");
  const OffsetWindow w = kernel_window(kernel);
  std::vector<HeadTap> out;
  for (std::size_t h = 0; h < p.shape(0); ++h) {
    HeadTap t;
    for (std::size_t axis = 0; axis < 2; ++axis)
      if (!(std::abs(centers(h, axis)) < 1e9))  // the tap is an int
        throw std::invalid_argument("head_taps: head " + std::to_string(h) + "'s centre is beyond 1e9 pixels");
    t.tap = {int(std::round(centers(h, 0))), int(std::round(centers(h, 1)))};
    t.center_distance = std::hypot(centers(h, 0) - t.tap[0], centers(h, 1) - t.tap[1]);
    t.leak = 1 - weight_at(p, h, origin, t.tap);
    double inside = 0;
    for (int a = w.first[0]; a <= w.last[0]; ++a)
      for (int b = w.first[1]; b <= w.last[1]; ++b) inside += weight_at(p, h, origin, {a, b});
    t.mass_outside = 1 - inside;
    t.in_window = w.contains(t.tap);
    out.push_back(t);
  }
  return out;
}

TapCoverage tap_coverage(const std::vector<HeadTap>& heads, std::array<int, 2> kernel) {
  std::map<std::array<int, 2>, int> count;
  for (const HeadTap& t : heads)
    if (t.in_window) ++count[t.tap];
  TapCoverage out;
  out.uncovered = kernel[0] * kernel[1] - int(count.size());
  for (const auto& [tap, n] : count) out.shared += n >= 2 ? 1 : 0;
  return out;
}

template <class T> std::array<int, 2> smallest_window(const OffsetWeights<T>& p, std::array<int, 2> origin, double mass) {
  const std::size_t r1 = p.shape(1), r2 = p.shape(2);
  std::vector<xt::xtensor<double, 2>> prefix;
  for (std::size_t h = 0; h < p.shape(0); ++h) {
    xt::xtensor<double, 2> s = xt::zeros<double>({r1 + 1, r2 + 1});
    for (std::size_t a = 0; a < r1; ++a)
      for (std::size_t b = 0; b < r2; ++b) s(a + 1, b + 1) = double(p(h, a, b)) + s(a, b + 1) + s(a + 1, b) - s(a, b);
    prefix.push_back(std::move(s));
  }
  std::optional<std::array<int, 2>> best, largest;
  const auto better = [](std::array<int, 2> k, const std::optional<std::array<int, 2>>& than) {
    if (!than) return true;
    const auto key = [](std::array<int, 2> x) { return std::array<int, 3>{x[0] * x[1], std::max(x[0], x[1]), x[0]}; };
    return key(k) < key(*than);
  };
  for (int k1 = 1; k1 <= int(r1); ++k1)
    for (int k2 = 1; k2 <= int(r2); ++k2) {
      const std::array<int, 2> k{k1, k2};
      if (!window_fits(k, origin, {r1, r2})) continue;
      if (!largest || k1 * k2 > (*largest)[0] * (*largest)[1]) largest = k;
      bool enough = true;
      for (const auto& s : prefix) enough = enough && window_mass(s, origin, kernel_window(k)) >= mass;
      if (enough && better(k, best)) best = k;
    }
  if (best) return *best;
  if (largest) return *largest;
  throw std::invalid_argument("smallest_window: no window fits the offsets around the query");
}

template Kernel<float> equivalent_kernel(const OffsetWeights<float>&, const xt::xtensor<float, 3>&, const Matrix<float>&);
template Kernel<float> window_kernel(const Kernel<float>&, std::array<int, 2>, std::array<int, 2>);
template std::vector<HeadTap> head_taps(const OffsetWeights<float>&, std::array<int, 2>, const Matrix<double>&,
                                        std::array<int, 2>);
template std::array<int, 2> smallest_window(const OffsetWeights<float>&, std::array<int, 2>, double);
template Kernel<double> equivalent_kernel(const OffsetWeights<double>&, const xt::xtensor<double, 3>&, const Matrix<double>&);
template Kernel<double> window_kernel(const Kernel<double>&, std::array<int, 2>, std::array<int, 2>);
template std::vector<HeadTap> head_taps(const OffsetWeights<double>&, std::array<int, 2>, const Matrix<double>&,
                                        std::array<int, 2>);
template std::array<int, 2> smallest_window(const OffsetWeights<double>&, std::array<int, 2>, double);

}  // namespace attnconv
