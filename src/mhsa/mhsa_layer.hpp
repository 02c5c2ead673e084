#pragma once
// The multi-head self-attention layer with relative positional encoding of
// Cordonnier, Loukas & Jaggi (ICLR 2020), Eq. 8, in full generality. Per head
// h, query pixel q, key pixel k, offset delta = k - q:
//   A_qk = (X_q W_qry)(X_k W_key)^T + (X_q W_qry).(W^_key r_delta)
//          + u.(X_k W_key) + v.(W^_key r_delta)
//   P_q = softmax_k(A_qk) over ALL keys of the image (global attention)
//   SA_h(X)_q = sum_k P_qk X_k W_val
//   MHSA(X) = concat_h(SA_h(X)) W_out + b_out
// Nothing here knows about the Theorem 1 construction.
#include <string>
#include <vector>

#include "tensor/tensor.hpp"

namespace attnconv {

// The relative positional encoding r_delta and its dimension D_p.
enum class Encoding {
  quadratic,          // D_p = 3: (|delta|^2, delta1, delta2)            (Theorem 1)
  quadratic_general,  // D_p = 5: (delta1^2, delta2^2, delta1*delta2, delta1, delta2)
  quadratic_1d,       // D_p = 2: (delta^2, delta), delta = delta2 on a 1 x L image
};

int encoding_dim(Encoding encoding);
std::string to_string(Encoding encoding);
Encoding encoding_from_string(const std::string& name);  // throws std::invalid_argument

// r_delta written to out[0 .. encoding_dim).
template <class T> void relative_encoding(Encoding encoding, int delta1, int delta2, T* out);

template <class T> struct AttentionHead {
  Matrix<T> w_qry;      // D_in x D_k
  Matrix<T> w_key;      // D_in x D_k
  Matrix<T> w_key_hat;  // D_k x D_p   (W^_key)
  Vector<T> u;          // D_k
  Vector<T> v;          // D_k
  Matrix<T> w_val;      // D_in x D_h
};

template <class T> struct MhsaLayer {
  Encoding encoding = Encoding::quadratic;
  std::vector<AttentionHead<T>> heads;
  Matrix<T> w_out;  // (N_h * D_h) x D_out
  Vector<T> b_out;  // D_out

  std::size_t in_dim() const { return heads.front().w_qry.shape(0); }
  std::size_t head_dim() const { return heads.front().w_val.shape(1); }
  std::size_t out_dim() const { return w_out.shape(1); }
};

// Throws std::invalid_argument naming the first inconsistent shape.
template <class T> void check_shapes(const MhsaLayer<T>& layer);

}  // namespace attnconv
