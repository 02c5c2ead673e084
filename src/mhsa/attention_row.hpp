#pragma once
// One query's attention probabilities, per head: P_q of Eq. 8 (Cordonnier et
// al., ICLR 2020) for a single query pixel, computed directly from the layer's
// parameters with the dense engine's softmax. For figures and inspection; the
// engines never call it.
#include <cstddef>

#include "mhsa/mhsa_layer.hpp"

namespace attnconv {

// x: (H*W) x D_in tokens of an H x W image (row-major), query: a token index.
// Returns heads x (H*W): row h is softmax_k(A_qk) of head h,
//   A_qk = (X_q W_qry)(X_k W_key)^T + (X_q W_qry).(W^_key r_delta) + u.(X_k W_key) + v.(W^_key r_delta).
template <class T>
Matrix<T> attention_rows(const MhsaLayer<T>& layer, const Matrix<T>& x, std::size_t height, std::size_t width,
                         std::size_t query);

}  // namespace attnconv
