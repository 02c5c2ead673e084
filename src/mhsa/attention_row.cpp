#include "mhsa/attention_row.hpp"

#include <stdexcept>
#include <vector>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

#include "mhsa/dense_engine.hpp"

namespace attnconv {

template <class T>
Matrix<T> attention_rows(const MhsaLayer<T>& layer, const Matrix<T>& x, std::size_t height, std::size_t width,
                         std::size_t query) {
  check_shapes(layer);
  const std::size_t n = height * width;
  if (x.shape(0) != n || x.shape(1) != layer.in_dim() || query >= n)
    throw std::invalid_argument("attention_rows: input shape or query out of range");
  const std::size_t d_p = std::size_t(encoding_dim(layer.encoding));
  const int qi = int(query / width), qj = int(query % width);
  Matrix<T> p({layer.heads.size(), n});
  std::vector<T> r(d_p);
  for (std::size_t h = 0; h < layer.heads.size(); ++h) {
    const AttentionHead<T>& head = layer.heads[h];
    const Vector<T> x_q = xt::view(x, query, xt::all());
    const Vector<T> q_vec = xt::linalg::dot(x_q, head.w_qry);          // X_q W_qry
    const Matrix<T> keys = xt::linalg::dot(x, head.w_key);             // X_k W_key, every k
    const Vector<T> q_pos = xt::linalg::dot(Vector<T>(q_vec + head.v), head.w_key_hat);  // (X_q W_qry + v) W^_key
    for (std::size_t k = 0; k < n; ++k) {
      const Vector<T> key = xt::view(keys, k, xt::all());
      relative_encoding(layer.encoding, int(k / width) - qi, int(k % width) - qj, r.data());
      T score = xt::sum(q_vec * key)() + xt::sum(head.u * key)();
      for (std::size_t d = 0; d < d_p; ++d) score += q_pos(d) * r[d];
      p(h, k) = score;
    }
    softmax_inplace(&p(h, 0), n);
  }
  return p;
}

template Matrix<float> attention_rows(const MhsaLayer<float>&, const Matrix<float>&, std::size_t, std::size_t,
                                      std::size_t);
template Matrix<double> attention_rows(const MhsaLayer<double>&, const Matrix<double>&, std::size_t, std::size_t,
                                       std::size_t);

}  // namespace attnconv
