#pragma once
// Gated positional self-attention (GPSA) of ConViT (d'Ascoli et al., ICML 2021,
// Eq. 5; facebookresearch/convit, convit.py, class GPSA, read for this code and
// written anew here). Per head h, query patch q, key patch k, offset
// delta = k - q (row, column) of an H x W grid of patches:
//   patch_h(q, k) = softmax_k((x_q W_qry^h).(x_k W_key^h) / sqrt(d))      d = D / N_h
//   pos_h(q, k)   = softmax_k(v_pos^h . r_delta),  r_delta = (delta1, delta2, |delta|^2)
//   A_h(q, k)     = (1 - sigma(lambda_h)) patch_h + sigma(lambda_h) pos_h, renormalised over k
//   y_q = concat_h (sum_k A_h(q, k) x_k W_val^h) W_proj + b_proj
// W^h are the columns h d ... (h + 1) d - 1 of the D x D projections (x W, our
// layout: ConViT's nn.Linear weights transposed). ConViT orders r as
// (delta_column, delta_row, |delta|^2); here it is (row, column) as everywhere
// in attnconv (docs/design.md, "ConViT's GPSA"). Its pos_proj bias is a
// constant per head, which the softmax cancels: not represented.
#include <cstddef>

#include "tensor/tensor.hpp"

namespace attnconv {

template <class T> struct GpsaLayer {
  std::size_t heads = 0;
  Matrix<T> w_qry, w_key, w_val, w_proj;  // D x D
  Vector<T> b_proj;                       // D
  Matrix<T> v_pos;                        // N_h x 3
  Vector<T> gating;                       // lambda_h, N_h
};

// The renormalised gated attention A_h(q, .) of query `query` (token i*W + j): N_h x (H*W).
template <class T>
Matrix<T> gpsa_attention(const GpsaLayer<T>& layer, const Matrix<T>& tokens, std::size_t height, std::size_t width,
                         std::size_t query);

// tokens (H*W) x D -> (H*W) x D.
template <class T>
Matrix<T> gpsa_forward(const GpsaLayer<T>& layer, const Matrix<T>& tokens, std::size_t height, std::size_t width);

}  // namespace attnconv
