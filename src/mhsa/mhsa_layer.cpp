#include "mhsa/mhsa_layer.hpp"

#include <stdexcept>

namespace attnconv {

int encoding_dim(Encoding encoding) {
  switch (encoding) {
    case Encoding::quadratic: return 3;
    case Encoding::quadratic_general: return 5;
    case Encoding::quadratic_1d: return 2;
  }
  return 0;
}

std::string to_string(Encoding encoding) {
  switch (encoding) {
    case Encoding::quadratic: return "quadratic";
    case Encoding::quadratic_general: return "quadratic_general";
    case Encoding::quadratic_1d: return "quadratic_1d";
  }
  return "?";
}

Encoding encoding_from_string(const std::string& name) {
  if (name == "quadratic") return Encoding::quadratic;
  if (name == "quadratic_general") return Encoding::quadratic_general;
  if (name == "quadratic_1d") return Encoding::quadratic_1d;
  throw std::invalid_argument("unknown encoding '" + name + "'");
}

template <class T> void relative_encoding(Encoding encoding, int delta1, int delta2, T* out) {
  const T d1 = T(delta1), d2 = T(delta2);
  switch (encoding) {
    case Encoding::quadratic:
      out[0] = d1 * d1 + d2 * d2, out[1] = d1, out[2] = d2;
      return;
    case Encoding::quadratic_general:
      out[0] = d1 * d1, out[1] = d2 * d2, out[2] = d1 * d2, out[3] = d1, out[4] = d2;
      return;
    case Encoding::quadratic_1d:
      out[0] = d2 * d2, out[1] = d2;
      return;
  }
}

template <class T> void check_shapes(const MhsaLayer<T>& layer) {
  if (layer.heads.empty()) throw std::invalid_argument("MHSA layer has no heads");
  const std::size_t d_in = layer.in_dim(), d_h = layer.head_dim(), d_p = std::size_t(encoding_dim(layer.encoding));
  for (std::size_t h = 0; h < layer.heads.size(); ++h) {
    const auto& head = layer.heads[h];
    const std::size_t d_k = head.w_qry.shape(1);
    const auto bad = [&](const char* what) {
      throw std::invalid_argument("MHSA head " + std::to_string(h) + ": " + what + " has the wrong shape");
    };
    if (head.w_qry.shape(0) != d_in) bad("W_qry");
    if (head.w_key.shape(0) != d_in || head.w_key.shape(1) != d_k) bad("W_key");
    if (head.w_key_hat.shape(0) != d_k || head.w_key_hat.shape(1) != d_p) bad("W^_key");
    if (head.u.shape(0) != d_k) bad("u");
    if (head.v.shape(0) != d_k) bad("v");
    if (head.w_val.shape(0) != d_in || head.w_val.shape(1) != d_h) bad("W_val");
  }
  if (layer.w_out.shape(0) != layer.heads.size() * d_h) throw std::invalid_argument("MHSA: W_out has the wrong shape");
  if (layer.b_out.shape(0) != layer.out_dim()) throw std::invalid_argument("MHSA: b_out has the wrong shape");
}

template void relative_encoding(Encoding, int, int, float*);
template void relative_encoding(Encoding, int, int, double*);
template void check_shapes(const MhsaLayer<float>&);
template void check_shapes(const MhsaLayer<double>&);

}  // namespace attnconv
