#include "mhsa/gpsa.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace attnconv {

namespace {

// softmax of `row` in place, the row maximum subtracted.
template <class T> void softmax(std::vector<T>& row) {
  const T top = *std::max_element(row.begin(), row.end());
  T total = 0;
  for (T& s : row) total += s = std::exp(s - top);
  for (T& s : row) s /= total;
}

template <class T> T sigmoid(T lambda) { return T(1) / (T(1) + std::exp(-lambda)); }

template <class T> void check(const GpsaLayer<T>& layer, const Matrix<T>& tokens, std::size_t height, std::size_t width) {
  const std::size_t d = tokens.shape(1);
  if (tokens.shape(0) != height * width) throw std::invalid_argument("gpsa: tokens are not H*W rows");
  if (layer.heads == 0 || d % layer.heads != 0) throw std::invalid_argument("gpsa: heads must divide D");
  for (const Matrix<T>* w : {&layer.w_qry, &layer.w_key, &layer.w_val, &layer.w_proj})
    if (w->shape(0) != d || w->shape(1) != d) throw std::invalid_argument("gpsa: a projection is not D x D");
  if (layer.b_proj.size() != d || layer.v_pos.shape(0) != layer.heads || layer.v_pos.shape(1) != 3 ||
      layer.gating.size() != layer.heads)
    throw std::invalid_argument("gpsa: b_proj, v_pos or gating has the wrong shape");
}

template <class T> Matrix<T> product(const Matrix<T>& a, const Matrix<T>& b) {
  Matrix<T> out = xt::zeros<T>({a.shape(0), b.shape(1)});
  for (std::size_t i = 0; i < a.shape(0); ++i)
    for (std::size_t k = 0; k < a.shape(1); ++k)
      for (std::size_t j = 0; j < b.shape(1); ++j) out(i, j) += a(i, k) * b(k, j);
  return out;
}

// A_h(q, .) for every head, from the projected queries and keys.
template <class T>
Matrix<T> attention(const GpsaLayer<T>& layer, const Matrix<T>& q, const Matrix<T>& k, std::size_t width,
                    std::size_t query) {
  const std::size_t n = q.shape(0), d = q.shape(1) / layer.heads;
  const T scale = T(1) / std::sqrt(T(d));
  Matrix<T> out = xt::zeros<T>({layer.heads, n});
  const int q1 = int(query / width), q2 = int(query % width);
  for (std::size_t h = 0; h < layer.heads; ++h) {
    std::vector<T> patch(n, T(0)), pos(n, T(0));
    for (std::size_t key = 0; key < n; ++key) {
      for (std::size_t a = h * d; a < (h + 1) * d; ++a) patch[key] += q(query, a) * k(key, a);
      patch[key] *= scale;
      const T d1 = T(int(key / width) - q1), d2 = T(int(key % width) - q2);
      pos[key] = layer.v_pos(h, 0) * d1 + layer.v_pos(h, 1) * d2 + layer.v_pos(h, 2) * (d1 * d1 + d2 * d2);
    }
    softmax(patch);
    softmax(pos);
    const T gate = sigmoid(layer.gating(h));
    T total = 0;
    for (std::size_t key = 0; key < n; ++key) total += out(h, key) = (T(1) - gate) * patch[key] + gate * pos[key];
    for (std::size_t key = 0; key < n; ++key) out(h, key) /= total;
  }
  return out;
}

}  // namespace

template <class T>
Matrix<T> gpsa_attention(const GpsaLayer<T>& layer, const Matrix<T>& tokens, std::size_t height, std::size_t width,
                         std::size_t query) {
  check(layer, tokens, height, width);
  return attention(layer, product(tokens, layer.w_qry), product(tokens, layer.w_key), width, query);
}

template <class T>
Matrix<T> gpsa_forward(const GpsaLayer<T>& layer, const Matrix<T>& tokens, std::size_t height, std::size_t width) {
  check(layer, tokens, height, width);
  const Matrix<T> q = product(tokens, layer.w_qry), k = product(tokens, layer.w_key), v = product(tokens, layer.w_val);
  const std::size_t n = tokens.shape(0), dim = tokens.shape(1), d = dim / layer.heads;
  Matrix<T> concat = xt::zeros<T>({n, dim});
  for (std::size_t query = 0; query < n; ++query) {
    const Matrix<T> a = attention(layer, q, k, width, query);
    for (std::size_t h = 0; h < layer.heads; ++h)
      for (std::size_t key = 0; key < n; ++key)
        for (std::size_t c = h * d; c < (h + 1) * d; ++c) concat(query, c) += a(h, key) * v(key, c);
  }
  Matrix<T> y = product(concat, layer.w_proj);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < dim; ++c) y(i, c) += layer.b_proj(c);
  return y;
}

template Matrix<float> gpsa_attention(const GpsaLayer<float>&, const Matrix<float>&, std::size_t, std::size_t, std::size_t);
template Matrix<double> gpsa_attention(const GpsaLayer<double>&, const Matrix<double>&, std::size_t, std::size_t,
                                       std::size_t);
template Matrix<float> gpsa_forward(const GpsaLayer<float>&, const Matrix<float>&, std::size_t, std::size_t);
template Matrix<double> gpsa_forward(const GpsaLayer<double>&, const Matrix<double>&, std::size_t, std::size_t);

}  // namespace attnconv
