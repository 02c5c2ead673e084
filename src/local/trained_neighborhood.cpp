#include "local/trained_neighborhood.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "local/neighborhood_attention.hpp"

namespace attnconv {

template <class T>
NeighborhoodForward<T> trained_neighborhood_forward(const TrainedNeighborhood<T>& layer, const xt::xtensor<T, 3>& x,
                                                    int height, int width) {
  const std::size_t n_samples = x.shape(0), tokens = x.shape(1), d_in = x.shape(2);
  const std::size_t d3 = layer.w_qkv.shape(0), dim = d3 / 3, heads = layer.heads;
  const int kernel = layer.kernel, dil = layer.dilation;
  const std::size_t table = std::size_t(2 * kernel - 1);
  if (height < 1 || width < 1 || tokens != std::size_t(height) * std::size_t(width) || d3 % 3 != 0 || heads == 0 ||
      dim % heads != 0 || layer.w_qkv.shape(1) != d_in || layer.b_qkv.size() != d3 || layer.w_proj.shape(1) != dim ||
      layer.b_proj.size() != layer.w_proj.shape(0) || layer.rpb.shape(0) != heads || layer.rpb.shape(1) != table ||
      layer.rpb.shape(2) != table)
    throw std::invalid_argument("trained_neighborhood_forward: qkv (3D, D), proj (D_out, D), rpb (N_h, 2K - 1, 2K - 1) "
                                "and tokens (N, H*W, D) on a " + std::to_string(height) + "x" + std::to_string(width) +
                                " grid disagree");
  const std::size_t d = dim / heads, d_out = layer.w_proj.shape(0);
  NeighborhoodForward<T> out;
  out.y = xt::xtensor<T, 3>::from_shape({n_samples, tokens, d_out});
  out.p = xt::zeros<double>({n_samples, heads, tokens, tokens});
  std::vector<double> qkv(tokens * d3), o(tokens * dim), score(std::size_t(kernel * kernel));
  std::vector<std::size_t> key(score.size());
  for (std::size_t n = 0; n < n_samples; ++n) {
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t r = 0; r < d3; ++r) {
        double s = double(layer.b_qkv(r));
        for (std::size_t i = 0; i < d_in; ++i) s += double(layer.w_qkv(r, i)) * double(x(n, t, i));
        qkv[t * d3 + r] = s;
      }
    std::fill(o.begin(), o.end(), 0.0);
    for (std::size_t h = 0; h < heads; ++h)
      for (int qi = 0; qi < height; ++qi)
        for (int qj = 0; qj < width; ++qj) {
          const std::size_t q = std::size_t(qi * width + qj);
          const int top = neighborhood_start(qi, height, kernel, dil), left = neighborhood_start(qj, width, kernel, dil);
          double largest = -std::numeric_limits<double>::infinity();
          for (int a = 0; a < kernel; ++a)
            for (int b = 0; b < kernel; ++b) {
              const int ki = top + a * dil, kj = left + b * dil;
              const std::size_t k = std::size_t(ki * width + kj), slot = std::size_t(a * kernel + b);
              // NATTEN's rpb index: the offset in dilated steps, shifted by K − 1.
              double s = double(layer.rpb(h, std::size_t((ki - qi) / dil + kernel - 1),
                                          std::size_t((kj - qj) / dil + kernel - 1)));
              double dot = 0;
              for (std::size_t j = 0; j < d; ++j) dot += qkv[q * d3 + h * d + j] * qkv[k * d3 + dim + h * d + j];
              s += dot * layer.scale;
              score[slot] = s;
              key[slot] = k;
              largest = std::max(largest, s);
            }
          double total = 0;
          for (double& s : score) total += s = std::exp(s - largest);
          for (std::size_t slot = 0; slot < score.size(); ++slot) {
            const double weight = score[slot] / total;
            out.p(n, h, q, key[slot]) = weight;
            for (std::size_t j = 0; j < d; ++j) o[q * dim + h * d + j] += weight * qkv[key[slot] * d3 + 2 * dim + h * d + j];
          }
        }
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t r = 0; r < d_out; ++r) {
        double s = double(layer.b_proj(r));
        for (std::size_t c = 0; c < dim; ++c) s += double(layer.w_proj(r, c)) * o[t * dim + c];
        out.y(n, t, r) = T(s);
      }
  }
  return out;
}

template NeighborhoodForward<float> trained_neighborhood_forward(const TrainedNeighborhood<float>&,
                                                                 const xt::xtensor<float, 3>&, int, int);
template NeighborhoodForward<double> trained_neighborhood_forward(const TrainedNeighborhood<double>&,
                                                                  const xt::xtensor<double, 3>&, int, int);

}  // namespace attnconv
