#include "mhsa/dense_engine.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <xtensor-blas/xblas.hpp>
#include <xtensor/xview.hpp>

namespace attnconv {

template <class T> void softmax_inplace(T* row, std::size_t n) {
  const T max = *std::max_element(row, row + n);
  T sum = 0;
  for (std::size_t k = 0; k < n; ++k) sum += (row[k] = std::exp(row[k] - max));
  const T inv = T(1) / sum;
  for (std::size_t k = 0; k < n; ++k) row[k] *= inv;
}

namespace {

// C = A B (or A B^T) into a preallocated C, through xtensor-blas.
template <class T> void gemm(const Matrix<T>& a, const Matrix<T>& b, Matrix<T>& c, bool transpose_b = false) {
  xt::blas::gemm(a, b, c, false, transpose_b);
}

template <class T> Matrix<T> product(const Matrix<T>& a, const Matrix<T>& b) {
  Matrix<T> c({a.shape(0), b.shape(1)});
  gemm(a, b, c);
  return c;
}

template <class T> Matrix<T> rows(const Matrix<T>& m, std::size_t begin, std::size_t end) {
  return xt::view(m, xt::range(begin, end), xt::all());
}

}  // namespace

template <class T>
Matrix<T> mhsa_dense(const MhsaLayer<T>& layer, const Matrix<T>& x, std::size_t height, std::size_t width,
                     const DenseOptions& options) {
  check_shapes(layer);
  const std::size_t n = height * width;
  if (x.shape(0) != n || x.shape(1) != layer.in_dim()) throw std::invalid_argument("mhsa_dense: input shape");
  const std::size_t d_h = layer.head_dim(), d_p = std::size_t(encoding_dim(layer.encoding));
  // (std::clamp(v, 16, n) would be undefined for n < 16.)
  const std::size_t block = options.block ? options.block : std::min(n, std::max<std::size_t>((1u << 20) / n, 16));

  // r_delta for every offset delta in [-(H-1), H-1] x [-(W-1), W-1], row-major.
  const std::size_t span_w = 2 * width - 1;
  std::vector<T> r_table((2 * height - 1) * span_w * d_p);
  for (std::size_t a = 0; a < 2 * height - 1; ++a)
    for (std::size_t b = 0; b < span_w; ++b)
      relative_encoding(layer.encoding, int(a) - int(height - 1), int(b) - int(width - 1),
                        &r_table[(a * span_w + b) * d_p]);

  Matrix<T> concat({n, layer.heads.size() * d_h});  // concat_h SA_h(X)
  Matrix<T> scores({std::min(block, n), n});
  Matrix<T> head_out({std::min(block, n), d_h});
  for (std::size_t h = 0; h < layer.heads.size(); ++h) {
    const AttentionHead<T>& head = layer.heads[h];
    const Matrix<T> query = product(x, head.w_qry);  // X W_qry
    const Matrix<T> key = product(x, head.w_key);    // X W_key
    const Matrix<T> value = product(x, head.w_val);  // X W_val
    // (X_q W_qry + v) W^_key: the coefficient of r_delta in A_qk, per query.
    const Matrix<T> query_pos = product(Matrix<T>(query + head.v), head.w_key_hat);
    // u . (X_k W_key): a bias per key.
    const Vector<T> key_bias = xt::sum(key * head.u, {1});

    for (std::size_t q0 = 0; q0 < n; q0 += block) {
      const std::size_t q1 = std::min(n, q0 + block), rows_in_block = q1 - q0;
      if (rows_in_block != scores.shape(0)) {
        scores.resize({rows_in_block, n});
        head_out.resize({rows_in_block, d_h});
      }
      gemm(rows(query, q0, q1), key, scores, /*transpose_b=*/true);  // (X_q W_qry)(X_k W_key)^T
      for (std::size_t q = q0; q < q1; ++q) {
        T* row = &scores(q - q0, 0);
        const T* a = &query_pos(q, 0);
        const std::size_t qi = q / width, qj = q % width;
        for (std::size_t ki = 0; ki < height; ++ki) {
          // offset delta = k - q, shifted to index r_table
          const T* r_row = &r_table[((ki + height - 1 - qi) * span_w + (width - 1 - qj)) * d_p];
          for (std::size_t kj = 0; kj < width; ++kj) {
            const T* r = r_row + kj * d_p;
            T positional = 0;
            for (std::size_t p = 0; p < d_p; ++p) positional += a[p] * r[p];
            row[ki * width + kj] += key_bias(ki * width + kj) + positional;
          }
        }
        softmax_inplace(row, n);
      }
      gemm(scores, value, head_out);  // sum_k P_qk X_k W_val
      xt::view(concat, xt::range(q0, q1), xt::range(h * d_h, (h + 1) * d_h)) = head_out;
    }
  }
  Matrix<T> y = product(concat, layer.w_out);
  y += xt::view(layer.b_out, xt::newaxis(), xt::all());
  return y;
}

template void softmax_inplace(float*, std::size_t);
template void softmax_inplace(double*, std::size_t);
template Matrix<float> mhsa_dense(const MhsaLayer<float>&, const Matrix<float>&, std::size_t, std::size_t,
                                  const DenseOptions&);
template Matrix<double> mhsa_dense(const MhsaLayer<double>&, const Matrix<double>&, std::size_t, std::size_t,
                                   const DenseOptions&);

}  // namespace attnconv
