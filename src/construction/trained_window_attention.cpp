#include "construction/trained_window_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace attnconv {

namespace {

// Swin's slices of one axis of length `padded` (step 4 of the header): the label of rolled position t.
int axis_label(int t, int padded, int window, int shift) {
  if (shift == 0) return 0;
  return t < padded - window ? 0 : t < padded - shift ? 1 : 2;
}

int wrap(int i, int n) { return ((i % n) + n) % n; }

}  // namespace

WindowGeometry window_geometry(std::array<int, 2> grid, std::array<int, 2> window, std::array<int, 2> shift) {
  WindowGeometry g{.grid = grid, .window = window};
  for (std::size_t a = 0; a < 2; ++a) {
    if (grid[a] < 1 || window[a] < 1 || shift[a] < 0 || shift[a] >= window[a])
      throw std::invalid_argument("Swin window attention: grid " + std::to_string(grid[a]) + ", window " +
                                  std::to_string(window[a]) + " and shift " + std::to_string(shift[a]) +
                                  " on axis " + std::to_string(a) + ": need grid, window >= 1 and 0 <= shift < window");
    g.padded[a] = (grid[a] + window[a] - 1) / window[a] * window[a];
    g.shift[a] = window[a] >= g.padded[a] ? 0 : shift[a];  // torchvision's rule
  }
  return g;
}

int relative_position_index(std::array<int, 2> window, std::array<int, 2> a, std::array<int, 2> b) {
  return (a[0] - b[0] + window[0] - 1) * (2 * window[1] - 1) + (a[1] - b[1] + window[1] - 1);
}

std::vector<int> shift_mask_labels(const WindowGeometry& g) {
  const int hp = g.padded[0], wp = g.padded[1];
  std::vector<int> labels(std::size_t(hp * wp), 0);
  if (g.shift[0] + g.shift[1] == 0) return labels;
  for (int r1 = 0; r1 < hp; ++r1)
    for (int r2 = 0; r2 < wp; ++r2)
      labels[std::size_t(r1 * wp + r2)] =
          3 * axis_label(r1, hp, g.window[0], g.shift[0]) + axis_label(r2, wp, g.window[1], g.shift[1]);
  return labels;
}

template <class T>
AttentionForward<T> swin_window_forward(const SwinWindowLayer<T>& layer, const xt::xtensor<T, 3>& x,
                                        std::array<int, 2> grid) {
  const TorchAttention<T>& at = layer.attention;
  const WindowGeometry g = window_geometry(grid, layer.window, layer.shift);
  const std::size_t n_samples = x.shape(0), tokens = x.shape(1), d_in = x.shape(2);
  const std::size_t d3 = at.w_qkv.shape(0), dim = d3 / 3, heads = at.heads;
  const int m1 = g.window[0], m2 = g.window[1], hp = g.padded[0], wp = g.padded[1];
  const std::size_t span = std::size_t((2 * m1 - 1) * (2 * m2 - 1));
  if (d3 % 3 != 0 || at.w_qkv.shape(1) != d_in || at.b_qkv.size() != d3 || heads == 0 || dim % heads != 0 ||
      at.w_proj.shape(1) != dim || at.b_proj.size() != at.w_proj.shape(0) ||
      tokens != std::size_t(grid[0]) * std::size_t(grid[1]) || layer.table.shape(0) != span ||
      layer.table.shape(1) != heads)
    throw std::invalid_argument("swin_window_forward: the layer (qkv " + std::to_string(d3) + " x " +
                                std::to_string(at.w_qkv.shape(1)) + ", table " + std::to_string(layer.table.shape(0)) +
                                " x " + std::to_string(layer.table.shape(1)) + ") does not fit " +
                                std::to_string(tokens) + " tokens of width " + std::to_string(d_in) + " on a " +
                                std::to_string(grid[0]) + "x" + std::to_string(grid[1]) + " grid");
  const std::size_t d = dim / heads, d_out = at.w_proj.shape(0), window_keys = std::size_t(m1 * m2);
  const double scale = 1.0 / std::sqrt(double(d));
  const std::vector<int> labels = shift_mask_labels(g);
  const std::size_t positions = std::size_t(hp * wp);
  const auto is_grid = [&](int i, int j) { return i < grid[0] && j < grid[1]; };

  AttentionForward<T> out;
  out.y = xt::xtensor<T, 3>::from_shape({n_samples, tokens, d_out});
  out.p = xt::zeros<double>({n_samples, heads, tokens, tokens});
  std::vector<double> qkv(positions * d3), o(dim), score(window_keys);
  std::vector<std::size_t> key_position(window_keys);
  for (std::size_t n = 0; n < n_samples; ++n) {
    // q, k, v of every padded position: W x + b on grid tokens, b on the zero tokens of the padding.
    for (int i = 0; i < hp; ++i)
      for (int j = 0; j < wp; ++j) {
        const std::size_t pos = std::size_t(i * wp + j);
        for (std::size_t r = 0; r < d3; ++r) {
          double s = double(at.b_qkv(r));
          if (is_grid(i, j)) {
            const std::size_t t = std::size_t(i * grid[1] + j);
            for (std::size_t c = 0; c < d_in; ++c) s += double(at.w_qkv(r, c)) * double(x(n, t, c));
          }
          qkv[pos * d3 + r] = s;
        }
      }
    for (int i = 0; i < grid[0]; ++i)
      for (int j = 0; j < grid[1]; ++j) {
        const std::size_t q = std::size_t(i * grid[1] + j), q_pos = std::size_t(i * wp + j);
        // Step 3: the rolled position of the query, its window's corner and its place a in it.
        const int r1 = wrap(i - g.shift[0], hp), r2 = wrap(j - g.shift[1], wp);
        const std::array<int, 2> corner{r1 / m1 * m1, r2 / m2 * m2}, a{r1 - corner[0], r2 - corner[1]};
        const int query_label = labels[std::size_t(r1 * wp + r2)];
        std::fill(o.begin(), o.end(), 0.0);
        for (std::size_t h = 0; h < heads; ++h) {
          double top = -std::numeric_limits<double>::infinity();
          for (int b1 = 0; b1 < m1; ++b1)
            for (int b2 = 0; b2 < m2; ++b2) {
              const std::size_t nb = std::size_t(b1 * m2 + b2);
              const int k1 = corner[0] + b1, k2 = corner[1] + b2;  // rolled
              const std::size_t k_pos = std::size_t(wrap(k1 + g.shift[0], hp) * wp + wrap(k2 + g.shift[1], wp));
              key_position[nb] = k_pos;
              double s = 0;
              for (std::size_t c = 0; c < d; ++c) s += qkv[q_pos * d3 + h * d + c] * qkv[k_pos * d3 + dim + h * d + c];
              s = s * scale + double(layer.table(std::size_t(relative_position_index(g.window, a, {b1, b2})), h));
              if (labels[std::size_t(k1 * wp + k2)] != query_label) s += swin_trained_mask_value;
              score[nb] = s;
              top = std::max(top, s);
            }
          double total = 0;
          for (double& s : score) total += s = std::exp(s - top);
          for (std::size_t nb = 0; nb < window_keys; ++nb) {
            const double pr = score[nb] / total;
            const std::size_t k_pos = key_position[nb];
            for (std::size_t c = 0; c < d; ++c) o[h * d + c] += pr * qkv[k_pos * d3 + 2 * dim + h * d + c];
            const int ki = int(k_pos) / wp, kj = int(k_pos) % wp;
            if (is_grid(ki, kj)) out.p(n, h, q, std::size_t(ki * grid[1] + kj)) = pr;
          }
        }
        for (std::size_t r = 0; r < d_out; ++r) {
          double s = double(at.b_proj(r));
          for (std::size_t c = 0; c < dim; ++c) s += double(at.w_proj(r, c)) * o[c];
          out.y(n, q, r) = T(s);
        }
      }
  }
  return out;
}

template AttentionForward<float> swin_window_forward(const SwinWindowLayer<float>&, const xt::xtensor<float, 3>&,
                                                     std::array<int, 2>);
template AttentionForward<double> swin_window_forward(const SwinWindowLayer<double>&, const xt::xtensor<double, 3>&,
                                                      std::array<int, 2>);

}  // namespace attnconv
