#pragma once
// A self-attention layer whose heads attend around a centre, in the
// parameterisation trained layers use (Cordonnier et al., ICLR 2020, Section 4;
// epfml/attention-cnn, docs/design.md "Other parameterisations"): per head h,
// query pixel q, key pixel k, offset δ = k − q,
//   A_qk = (X_q W_qry^h)(X_k W_key^h)ᵀ − (δ − Δ_h)ᵀ A_h (δ − Δ_h),
// with Δ_h the head's centre (row, column) and A_h a symmetric positive
// semi-definite precision; values and output as in Eq. 8.
#include <optional>

#include "mhsa/mhsa_layer.hpp"

namespace attnconv {

template <class T> struct GaussianAttention {
  Matrix<double> centers;                 // (N_h, 2): Δ_h
  xt::xtensor<double, 3> precisions;      // (N_h, 2, 2): A_h
  xt::xtensor<T, 3> w_val;                // (N_h, D_in, D_h)
  Matrix<T> w_out;                        // (N_h·D_h, D_out)
  Vector<T> b_out;                        // (D_out)
  std::optional<xt::xtensor<T, 3>> w_qry, w_key;  // (N_h, D_in, D_k): the content terms, or none
};

// The same layer as Eq. 8 with the quadratic_general encoding
// r_δ = (δ1², δ2², δ1·δ2, δ1, δ2): since
//   −(δ − Δ)ᵀA(δ − Δ) = (−a11, −a22, −2·a12, 2(AΔ)1, 2(AΔ)2)·r_δ − ΔᵀAΔ
// and a constant per head does not change a softmax, each head gets one extra
// key dimension e: W_qry, W_key padded with a zero column, W^_key = e ⊗ that
// vector, v = e, u = 0. The content terms are then exactly (X_q W_qry)(X_k W_key)ᵀ.
// `content` false drops them (W_qry = W_key = 0).
template <class T> MhsaLayer<T> to_mhsa_layer(const GaussianAttention<T>& layer, bool content = true);

}  // namespace attnconv
