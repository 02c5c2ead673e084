#include "construction/trained_gpsa.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnconv {

namespace {

// softmax of `row` in place, the row maximum subtracted.
void softmax(std::vector<double>& row) {
  const double top = *std::max_element(row.begin(), row.end());
  double total = 0;
  for (double& s : row) total += s = std::exp(s - top);
  for (double& s : row) s /= total;
}

double sigmoid(double lambda) { return 1.0 / (1.0 + std::exp(-lambda)); }

template <class T> void check(const TorchGpsa<T>& l, const xt::xtensor<T, 3>& x, int h, int w) {
  const std::size_t dim = x.shape(2), heads = l.heads;
  const bool ok = h > 0 && w > 0 && x.shape(1) == std::size_t(h) * std::size_t(w) && heads > 0 && dim % heads == 0 &&
                  l.w_qk.shape(0) == 2 * dim && l.w_qk.shape(1) == dim && l.b_qk.size() == 2 * dim &&
                  l.w_v.shape(0) == dim && l.w_v.shape(1) == dim && l.b_v.size() == dim && l.w_proj.shape(0) == dim &&
                  l.w_proj.shape(1) == dim && l.b_proj.size() == dim && l.w_pos.shape(0) == heads &&
                  l.w_pos.shape(1) == 3 && l.b_pos.size() == heads && l.gating.size() == heads;
  if (!ok)
    throw std::invalid_argument("gpsa_torch_forward: the layer's shapes (qk " + std::to_string(l.w_qk.shape(0)) + "x" +
                                std::to_string(l.w_qk.shape(1)) + ", " + std::to_string(heads) +
                                " heads) do not fit tokens of width " + std::to_string(dim) + " on a " +
                                std::to_string(h) + "x" + std::to_string(w) + " grid");
}

}  // namespace

template <class T> AttentionForward<T> gpsa_torch_forward(const TorchGpsa<T>& layer, const xt::xtensor<T, 3>& x, int h, int w) {
  check(layer, x, h, w);
  const std::size_t n_samples = x.shape(0), tokens = x.shape(1), dim = x.shape(2), heads = layer.heads;
  const std::size_t d = dim / heads;
  const double scale = 1.0 / std::sqrt(double(d));
  AttentionForward<T> out;
  out.y = xt::xtensor<T, 3>::from_shape({n_samples, tokens, dim});
  out.p = xt::xtensor<double, 4>::from_shape({n_samples, heads, tokens, tokens});
  // The positional scores do not depend on the sample: w_h · r(q, k) + c_h.
  xt::xtensor<double, 3> pos = xt::zeros<double>({heads, tokens, tokens});
  for (std::size_t hd = 0; hd < heads; ++hd)
    for (std::size_t q = 0; q < tokens; ++q) {
      std::vector<double> row(tokens);
      for (std::size_t k = 0; k < tokens; ++k) {
        const double d_col = double(int(k % std::size_t(w)) - int(q % std::size_t(w)));
        const double d_row = double(int(k / std::size_t(w)) - int(q / std::size_t(w)));
        row[k] = double(layer.w_pos(hd, 0)) * d_col + double(layer.w_pos(hd, 1)) * d_row +
                 double(layer.w_pos(hd, 2)) * (d_col * d_col + d_row * d_row) + double(layer.b_pos(hd));
      }
      softmax(row);
      for (std::size_t k = 0; k < tokens; ++k) pos(hd, q, k) = row[k];
    }
  std::vector<double> qk(tokens * 2 * dim), v(tokens * dim), o(tokens * dim), row(tokens);
  for (std::size_t n = 0; n < n_samples; ++n) {
    for (std::size_t t = 0; t < tokens; ++t) {
      for (std::size_t r = 0; r < 2 * dim; ++r) {
        double s = double(layer.b_qk(r));
        for (std::size_t i = 0; i < dim; ++i) s += double(layer.w_qk(r, i)) * double(x(n, t, i));
        qk[t * 2 * dim + r] = s;
      }
      for (std::size_t r = 0; r < dim; ++r) {
        double s = double(layer.b_v(r));
        for (std::size_t i = 0; i < dim; ++i) s += double(layer.w_v(r, i)) * double(x(n, t, i));
        v[t * dim + r] = s;
      }
    }
    for (std::size_t hd = 0; hd < heads; ++hd) {
      const double gate = sigmoid(double(layer.gating(hd)));
      for (std::size_t q = 0; q < tokens; ++q) {
        for (std::size_t k = 0; k < tokens; ++k) {
          double s = 0;
          for (std::size_t j = 0; j < d; ++j) s += qk[q * 2 * dim + hd * d + j] * qk[k * 2 * dim + dim + hd * d + j];
          row[k] = s * scale;
        }
        softmax(row);
        double total = 0;
        for (std::size_t k = 0; k < tokens; ++k) total += row[k] = (1 - gate) * row[k] + gate * pos(hd, q, k);
        for (std::size_t k = 0; k < tokens; ++k) out.p(n, hd, q, k) = row[k] / total;
        for (std::size_t j = 0; j < d; ++j) {
          double s = 0;
          for (std::size_t k = 0; k < tokens; ++k) s += out.p(n, hd, q, k) * v[k * dim + hd * d + j];
          o[q * dim + hd * d + j] = s;
        }
      }
    }
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t r = 0; r < dim; ++r) {
        double s = double(layer.b_proj(r));
        for (std::size_t c = 0; c < dim; ++c) s += double(layer.w_proj(r, c)) * o[t * dim + c];
        out.y(n, t, r) = T(s);
      }
  }
  return out;
}

template <class T> xt::xtensor<double, 3> head_maps(const TorchGpsa<T>& layer) {
  const std::size_t dim = layer.w_v.shape(0), heads = layer.heads, d = dim / heads;
  xt::xtensor<double, 3> m = xt::zeros<double>({heads, dim, dim});
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t o = 0; o < dim; ++o)
      for (std::size_t j = 0; j < d; ++j) {
        const double wo = double(layer.w_proj(o, h * d + j));
        for (std::size_t i = 0; i < dim; ++i) m(h, o, i) += wo * double(layer.w_v(h * d + j, i));
      }
  return m;
}

template <class T> Vector<double> folded_bias(const TorchGpsa<T>& layer) {
  const std::size_t dim = layer.w_v.shape(0);
  Vector<double> b = xt::zeros<double>({dim});
  for (std::size_t o = 0; o < dim; ++o) {
    double s = double(layer.b_proj(o));
    for (std::size_t c = 0; c < dim; ++c) s += double(layer.w_proj(o, c)) * double(layer.b_v(c));
    b(o) = s;
  }
  return b;
}

template <class T> std::vector<double> gate_sigmas(const TorchGpsa<T>& layer) {
  std::vector<double> s;
  for (const T lambda : layer.gating) s.push_back(sigmoid(double(lambda)));
  return s;
}

template AttentionForward<float> gpsa_torch_forward(const TorchGpsa<float>&, const xt::xtensor<float, 3>&, int, int);
template AttentionForward<double> gpsa_torch_forward(const TorchGpsa<double>&, const xt::xtensor<double, 3>&, int, int);
template xt::xtensor<double, 3> head_maps(const TorchGpsa<float>&);
template xt::xtensor<double, 3> head_maps(const TorchGpsa<double>&);
template Vector<double> folded_bias(const TorchGpsa<float>&);
template Vector<double> folded_bias(const TorchGpsa<double>&);
template std::vector<double> gate_sigmas(const TorchGpsa<float>&);
template std::vector<double> gate_sigmas(const TorchGpsa<double>&);

}  // namespace attnconv
