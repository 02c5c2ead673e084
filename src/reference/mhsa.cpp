#include "reference/mhsa.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace attnconv::reference {

namespace {

// r_delta of docs/design.md, "Relative positional encodings".
std::vector<Real> r_delta(Encoding encoding, int delta1, int delta2) {
  const Real d1 = delta1, d2 = delta2;
  switch (encoding) {
    case Encoding::quadratic: return {d1 * d1 + d2 * d2, d1, d2};
    case Encoding::quadratic_general: return {d1 * d1, d2 * d2, d1 * d2, d1, d2};
    case Encoding::quadratic_1d: return {d2 * d2, d2};
  }
  return {};
}

}  // namespace

template <class T>
xt::xtensor<Real, 2> mhsa(const MhsaLayer<T>& layer, const Matrix<T>& x, std::size_t height, std::size_t width) {
  check_shapes(layer);
  if (x.shape(0) != height * width || x.shape(1) != layer.in_dim())
    throw std::invalid_argument("reference::mhsa: x is not (H*W) x D_in");
  const std::size_t n = height * width, d_in = x.shape(1), d_h = layer.head_dim();
  xt::xtensor<Real, 2> concat = xt::zeros<Real>({n, layer.heads.size() * d_h});  // concat_h SA_h(X)
  for (std::size_t h = 0; h < layer.heads.size(); ++h) {
    const AttentionHead<T>& head = layer.heads[h];
    const std::size_t d_k = head.w_qry.shape(1), d_p = head.w_key_hat.shape(1);
    for (std::size_t q = 0; q < n; ++q) {
      std::vector<Real> query(d_k, 0);  // X_q W_qry
      for (std::size_t a = 0; a < d_k; ++a)
        for (std::size_t c = 0; c < d_in; ++c) query[a] += Real(x(q, c)) * Real(head.w_qry(c, a));
      std::vector<Real> score(n, 0);  // A_qk
      for (std::size_t k = 0; k < n; ++k) {
        std::vector<Real> key(d_k, 0);  // X_k W_key
        for (std::size_t a = 0; a < d_k; ++a)
          for (std::size_t c = 0; c < d_in; ++c) key[a] += Real(x(k, c)) * Real(head.w_key(c, a));
        const int delta1 = int(k / width) - int(q / width), delta2 = int(k % width) - int(q % width);
        const std::vector<Real> r = r_delta(layer.encoding, delta1, delta2);
        std::vector<Real> position(d_k, 0);  // W^_key r_delta
        for (std::size_t a = 0; a < d_k; ++a)
          for (std::size_t p = 0; p < d_p; ++p) position[a] += Real(head.w_key_hat(a, p)) * r[p];
        for (std::size_t a = 0; a < d_k; ++a)
          score[k] += query[a] * key[a] + query[a] * position[a] + Real(head.u(a)) * key[a] +
                      Real(head.v(a)) * position[a];
      }
      const Real max = *std::max_element(score.begin(), score.end());
      Real sum = 0;
      for (Real& s : score) sum += (s = std::exp(s - max));
      for (std::size_t k = 0; k < n; ++k)
        for (std::size_t d = 0; d < d_h; ++d) {
          Real value = 0;  // (X_k W_val)_d
          for (std::size_t c = 0; c < d_in; ++c) value += Real(x(k, c)) * Real(head.w_val(c, d));
          concat(q, h * d_h + d) += score[k] / sum * value;
        }
    }
  }
  xt::xtensor<Real, 2> y({n, layer.out_dim()});
  for (std::size_t q = 0; q < n; ++q)
    for (std::size_t o = 0; o < layer.out_dim(); ++o) {
      Real sum = Real(layer.b_out(o));
      for (std::size_t j = 0; j < concat.shape(1); ++j) sum += concat(q, j) * Real(layer.w_out(j, o));
      y(q, o) = sum;
    }
  return y;
}

template xt::xtensor<Real, 2> mhsa(const MhsaLayer<float>&, const Matrix<float>&, std::size_t, std::size_t);
template xt::xtensor<Real, 2> mhsa(const MhsaLayer<double>&, const Matrix<double>&, std::size_t, std::size_t);

}  // namespace attnconv::reference
