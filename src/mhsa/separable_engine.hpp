#pragma once
// The separable engine (docs/design.md, "Exact separable form"): when a head has no
// content terms (W_qry = 0, and u = 0 or W_key = 0) its score is the positional
// term alone, A_qk = v . (W^_key r_delta) = a . r_delta with a = W^_key^T v.
// When that splits as f(delta1) + g(delta2) (the quadratic and quadratic_1d
// encodings always; quadratic_general only when its delta1*delta2 coefficient
// a_3 is exactly 0), the softmax over all keys factorises exactly:
//   P_qk = P_rows[q1, k1] * P_cols[q2, k2],  P_rows = softmax_k1 f(k1 - q1), P_cols = softmax_k2 g(k2 - q2),
// and SA_h(X) = (P_rows (x) P_cols) X W_val is two batched products:
// O(HW (H + W) D) instead of O((HW)^2 D). Weights that are exactly 0 are skipped
// (exact). It is an engine for the same layer and is tested against the dense one.
#include <string>

#include "mhsa/mhsa_layer.hpp"
#include "mhsa/query_grid.hpp"

namespace attnconv {

// Empty when the separable engine is exact for this layer, else the reason
// (which head, which term).
template <class T> std::string separable_refusal(const MhsaLayer<T>& layer);

// Whether the separable engine is exact for this layer: the choice of run_mhsa's
// auto_ and what mhsa_separable accepts (every other layer it refuses).
template <class T> bool separable_exact(const MhsaLayer<T>& layer) { return separable_refusal(layer).empty(); }

// x: (H*W) x D_in tokens of an H x W image. Throws std::invalid_argument with
// separable_refusal() when the layer does not factorise.
template <class T>
Matrix<T> mhsa_separable(const MhsaLayer<T>& layer, const Matrix<T>& x, std::size_t height, std::size_t width);

// The outputs at `queries` alone, (queries.size()) x D_out: P_rows and P_cols
// have only those rows, so a strided layer computes only what it keeps. Each
// output is the same sum, in the same order, as in the whole image's.
template <class T>
Matrix<T> mhsa_separable(const MhsaLayer<T>& layer, const Matrix<T>& x, std::size_t height, std::size_t width,
                         const QueryGrid& queries);

// The floating-point operations of the separable algorithm (no zero skipped;
// same counting rules as dense_flops), each head counted on its own: heads
// that share a column attention share its pass, so a layer built by Theorem 1's
// construction executes fewer.
double separable_flops(std::size_t height, std::size_t width, std::size_t d_in, std::size_t d_p, std::size_t d_h,
                       std::size_t d_out, std::size_t heads);
double separable_flops(std::size_t height, std::size_t width, std::size_t d_in, std::size_t d_p, std::size_t d_h,
                       std::size_t d_out, std::size_t heads, const QueryGrid& queries);

}  // namespace attnconv
