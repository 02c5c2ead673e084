#include "construction/trained_gaussian.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnconv {

template <class T>
AttentionForward<T> gaussian_grid_forward(const GaussianAttention<T>& layer, const xt::xtensor<T, 3>& x, int height,
                                          int width) {
  const std::size_t n_samples = x.shape(0), tokens = x.shape(1), d_in = x.shape(2);
  const std::size_t heads = layer.centers.shape(0), d_h = layer.w_val.shape(2), d_out = layer.w_out.shape(1);
  const std::size_t d_k = layer.w_qry ? layer.w_qry->shape(2) : 0;
  if (height < 1 || width < 1 || tokens != std::size_t(height) * std::size_t(width) || layer.centers.shape(1) != 2 ||
      layer.precisions.shape(0) != heads || layer.w_val.shape(0) != heads || layer.w_val.shape(1) != d_in ||
      layer.w_out.shape(0) != heads * d_h || layer.b_out.size() != d_out || bool(layer.w_qry) != bool(layer.w_key))
    throw std::invalid_argument("gaussian_grid_forward: centres (N_h, 2), precisions (N_h, 2, 2), w_val (N_h, D_in, D_h), "
                                "w_out (N_h D_h, D_out) and tokens (N, H*W, D_in) on a " +
                                std::to_string(height) + "x" + std::to_string(width) + " grid disagree");
  AttentionForward<T> out;
  out.y = xt::xtensor<T, 3>::from_shape({n_samples, tokens, d_out});
  out.p = xt::xtensor<double, 4>::from_shape({n_samples, heads, tokens, tokens});
  std::vector<double> row(tokens), query(d_k), averaged(d_in), keys(tokens * d_k);
  for (std::size_t n = 0; n < n_samples; ++n) {
    std::vector<double> y(tokens * d_out);
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t o = 0; o < d_out; ++o) y[t * d_out + o] = double(layer.b_out(o));
    for (std::size_t h = 0; h < heads; ++h) {
      const double a11 = layer.precisions(h, 0, 0), a12 = layer.precisions(h, 0, 1), a21 = layer.precisions(h, 1, 0),
                   a22 = layer.precisions(h, 1, 1), c1 = layer.centers(h, 0), c2 = layer.centers(h, 1);
      for (std::size_t k = 0; k < tokens && d_k > 0; ++k)
        for (std::size_t j = 0; j < d_k; ++j) {
          double s = 0;
          for (std::size_t i = 0; i < d_in; ++i) s += double(x(n, k, i)) * double((*layer.w_key)(h, i, j));
          keys[k * d_k + j] = s;
        }
      for (int qr = 0; qr < height; ++qr)
        for (int qc = 0; qc < width; ++qc) {
          const std::size_t q = std::size_t(qr * width + qc);
          for (std::size_t j = 0; j < d_k; ++j) {
            double s = 0;
            for (std::size_t i = 0; i < d_in; ++i) s += double(x(n, q, i)) * double((*layer.w_qry)(h, i, j));
            query[j] = s;
          }
          double largest = -std::numeric_limits<double>::infinity();
          for (int kr = 0; kr < height; ++kr)
            for (int kc = 0; kc < width; ++kc) {
              const std::size_t k = std::size_t(kr * width + kc);
              const double e1 = double(kr - qr) - c1, e2 = double(kc - qc) - c2;
              double s = -(a11 * e1 * e1 + (a12 + a21) * e1 * e2 + a22 * e2 * e2);
              for (std::size_t j = 0; j < d_k; ++j) s += query[j] * keys[k * d_k + j];
              row[k] = s;
              largest = std::max(largest, s);
            }
          double total = 0;
          for (double& s : row) total += s = std::exp(s - largest);
          std::fill(averaged.begin(), averaged.end(), 0.0);
          for (std::size_t k = 0; k < tokens; ++k) {
            const double weight = out.p(n, h, q, k) = row[k] / total;
            for (std::size_t i = 0; i < d_in; ++i) averaged[i] += weight * double(x(n, k, i));
          }
          for (std::size_t j = 0; j < d_h; ++j) {
            double v = 0;
            for (std::size_t i = 0; i < d_in; ++i) v += averaged[i] * double(layer.w_val(h, i, j));
            for (std::size_t o = 0; o < d_out; ++o) y[q * d_out + o] += v * double(layer.w_out(h * d_h + j, o));
          }
        }
    }
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t o = 0; o < d_out; ++o) out.y(n, t, o) = T(y[t * d_out + o]);
  }
  return out;
}

template <class T> xt::xtensor<double, 3> gaussian_head_maps(const GaussianAttention<T>& layer) {
  const std::size_t heads = layer.w_val.shape(0), d_in = layer.w_val.shape(1), d_h = layer.w_val.shape(2);
  const std::size_t d_out = layer.w_out.shape(1);
  xt::xtensor<double, 3> m = xt::zeros<double>({heads, d_out, d_in});
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t o = 0; o < d_out; ++o)
      for (std::size_t i = 0; i < d_in; ++i) {
        double s = 0;
        for (std::size_t j = 0; j < d_h; ++j) s += double(layer.w_val(h, i, j)) * double(layer.w_out(h * d_h + j, o));
        m(h, o, i) = s;
      }
  return m;
}

template AttentionForward<float> gaussian_grid_forward(const GaussianAttention<float>&, const xt::xtensor<float, 3>&,
                                                       int, int);
template AttentionForward<double> gaussian_grid_forward(const GaussianAttention<double>&,
                                                        const xt::xtensor<double, 3>&, int, int);
template xt::xtensor<double, 3> gaussian_head_maps(const GaussianAttention<float>&);
template xt::xtensor<double, 3> gaussian_head_maps(const GaussianAttention<double>&);

}  // namespace attnconv
