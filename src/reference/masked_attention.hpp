#pragma once
// Attention of each query over every key, a local variant's window given as a
// mask: the textbook loop the local fast paths (src/local/, ACmix's attention
// path) are checked against (tests/unit/test_fast_paths.cpp). Per head h,
// query i, key j (scaled dot-product attention, Vaswani et al. 2017, Eq. 1,
// with an additive bias and a mask):
//   score_ij = q_i . k_j + bias_ij
//   P_ij     = m_ij exp(score_ij) / sum_j' m_ij' exp(score_ij')
//   out_i    = sum_j P_ij v_j
// m_ij is how many times key j lies in query i's window: 0 masks it out (a
// reflected window, as ACmix's, can hold a key twice). Plain loops in long
// double, every key visited; the largest score in the window subtracted.
#include <cstddef>
#include <functional>

#include "reference/mhsa.hpp"  // Real

namespace attnconv::reference {

struct KeyInWindow {
  int multiplicity = 0;  // m_ij
  Real bias = 0;         // bias_ij
};

using WindowRule = std::function<KeyInWindow(std::size_t head, std::size_t query, std::size_t key)>;

// q (heads, N_q, D_k), k (heads, N_k, D_k), v (heads, N_k, D_v) -> (heads, N_q, D_v).
// Throws std::invalid_argument on inconsistent shapes or a query with an empty window.
template <class T>
xt::xtensor<Real, 3> masked_attention(const xt::xtensor<T, 3>& q, const xt::xtensor<T, 3>& k,
                                      const xt::xtensor<T, 3>& v, const WindowRule& window);

}  // namespace attnconv::reference
