#include "reference/masked_attention.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace attnconv::reference {

template <class T>
xt::xtensor<Real, 3> masked_attention(const xt::xtensor<T, 3>& q, const xt::xtensor<T, 3>& k,
                                      const xt::xtensor<T, 3>& v, const WindowRule& window) {
  const std::size_t heads = q.shape(0), n_q = q.shape(1), n_k = k.shape(1), d_k = q.shape(2), d_v = v.shape(2);
  if (k.shape(0) != heads || k.shape(2) != d_k || v.shape(0) != heads || v.shape(1) != n_k)
    throw std::invalid_argument("reference::masked_attention: q (heads, N_q, D_k), k (heads, N_k, D_k) and "
                                "v (heads, N_k, D_v) disagree");
  xt::xtensor<Real, 3> out = xt::zeros<Real>({heads, n_q, d_v});
  std::vector<KeyInWindow> rule(n_k);
  std::vector<Real> score(n_k);
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < n_q; ++i) {
      Real largest = -INFINITY;
      for (std::size_t j = 0; j < n_k; ++j) {
        rule[j] = window(h, i, j);
        if (rule[j].multiplicity == 0) continue;
        score[j] = rule[j].bias;  // score_ij = q_i . k_j + bias_ij
        for (std::size_t c = 0; c < d_k; ++c) score[j] += Real(q(h, i, c)) * Real(k(h, j, c));
        largest = std::max(largest, score[j]);
      }
      if (largest == -INFINITY) throw std::invalid_argument("reference::masked_attention: a query with no key");
      Real total = 0;  // sum_j m_ij exp(score_ij)
      for (std::size_t j = 0; j < n_k; ++j)
        if (rule[j].multiplicity > 0) total += rule[j].multiplicity * std::exp(score[j] - largest);
      for (std::size_t j = 0; j < n_k; ++j) {
        if (rule[j].multiplicity == 0) continue;
        const Real p = rule[j].multiplicity * std::exp(score[j] - largest) / total;  // P_ij
        for (std::size_t c = 0; c < d_v; ++c) out(h, i, c) += p * Real(v(h, j, c));
      }
    }
  return out;
}

template xt::xtensor<Real, 3> masked_attention(const xt::xtensor<float, 3>&, const xt::xtensor<float, 3>&,
                                               const xt::xtensor<float, 3>&, const WindowRule&);
template xt::xtensor<Real, 3> masked_attention(const xt::xtensor<double, 3>&, const xt::xtensor<double, 3>&,
                                               const xt::xtensor<double, 3>&, const WindowRule&);

}  // namespace attnconv::reference
