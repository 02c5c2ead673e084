#include "mhsa/dense_engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <utility>
#include <stdexcept>
#include <vector>

#include "parallel/threads.hpp"
#include "mhsa/blas.hpp"
#include "tensor/vectorise.hpp"

#include <xtensor/xview.hpp>

namespace attnconv {

// Below this argument std::exp rounds to exactly 0 (e^x < 2^-1075 in double,
// < 2^-150 in float): such softmax terms are skipped, which is exact.
template <class T> constexpr T exp_underflow() { return std::is_same_v<T, float> ? T(-104.0) : T(-745.2); }

// Four doubles or eight floats as one vector (the GCC/Clang vector extension):
// each clone lowers it to its own registers (AVX2 and AVX-512: one ymm).
template <class T> struct VectorOf;
template <> struct VectorOf<double> { typedef double type __attribute__((vector_size(32))); };
template <> struct VectorOf<float> { typedef float type __attribute__((vector_size(32))); };

// The maximum of row[0, n), or NaN if the row holds one: a NaN score must
// reach the softmax (its span is then the whole row, so its output is NaN).
// Element-wise max in four vectors of lanes (four short dependency chains),
// then across them: max is exact, so the order does not matter.
// Inlined into each clone of its callers.
template <class T> inline T lanes_max(const T* row, std::size_t n) {
  using V = typename VectorOf<T>::type;
  constexpr std::size_t lanes = sizeof(V) / sizeof(T);
  constexpr T lowest = -std::numeric_limits<T>::infinity();
  // (no helper takes or returns a V: its ABI would differ between the clones)
  V m[4], nan_found[4] = {};
  for (V& chain : m) chain = V{} + lowest;
  std::size_t k = 0;
  for (; k + 4 * lanes <= n; k += 4 * lanes)
#pragma GCC unroll 4
    for (std::size_t c = 0; c < 4; ++c) {
      V s;
      std::memcpy(&s, row + k + c * lanes, sizeof s);
      m[c] = s > m[c] ? s : m[c];
      nan_found[c] = s != s ? s : nan_found[c];
    }
  for (; k + lanes <= n; k += lanes) {
    V s;
    std::memcpy(&s, row + k, sizeof s);
    m[0] = s > m[0] ? s : m[0];
    nan_found[0] = s != s ? s : nan_found[0];
  }
  m[0] = m[1] > m[0] ? m[1] : m[0], m[2] = m[3] > m[2] ? m[3] : m[2];
  const V all = m[2] > m[0] ? m[2] : m[0];
  const V nan = nan_found[0] + nan_found[1] + nan_found[2] + nan_found[3];  // NaN where any was
  T max = lowest;
  bool any_nan = false;
  for (std::size_t l = 0; l < lanes; ++l) max = all[l] > max ? all[l] : max, any_nan |= nan[l] != nan[l];
  for (; k < n; ++k) max = row[k] > max ? row[k] : max, any_nan |= row[k] != row[k];
  return any_nan ? std::numeric_limits<T>::quiet_NaN() : max;
}

template <class T> ATTNCONV_AVX2_CLONES T row_max(const T* row, std::size_t n) { return lanes_max(row, n); }

// The scan skips whole chunks of 8 keys whose weights all underflow (a loop
// the compiler vectorises), then steps key by key.
template <class T> ATTNCONV_AVX2_CLONES SoftmaxSupport softmax_span(const T* row, std::size_t n, T max) {
  constexpr std::size_t chunk = 8;
  const auto all_underflow = [&](std::size_t first) {
    std::size_t under = 0;
    for (std::size_t l = 0; l < chunk; ++l) under += row[first + l] - max < exp_underflow<T>();
    return under == chunk;
  };
  std::size_t begin = 0, end = n;
  while (begin + chunk <= n && all_underflow(begin)) begin += chunk;
  while (row[begin] - max < exp_underflow<T>()) ++begin;  // stops at the maximum (0) at the latest
  while (end >= begin + chunk && all_underflow(end - chunk)) end -= chunk;
  while (row[end - 1] - max < exp_underflow<T>()) --end;
  return {begin, end};
}

// Every key of a chunk underflows when its maximum does (x - max rounds
// monotonically in x), so the chunks are skipped whole, then the keys of the
// first and last chunk that does not are scanned one by one (each chunk's
// maximum is one of its keys, or NaN when one is: the scans stop there).
template <class T>
SoftmaxSupport softmax_span(const T* row, const T* chunk_max, std::size_t chunks, std::size_t width, T max) {
  std::size_t first = 0, last = chunks;
  while (chunk_max[first] - max < exp_underflow<T>()) ++first;  // stops at the chunk of the maximum at the latest
  while (chunk_max[last - 1] - max < exp_underflow<T>()) --last;
  std::size_t begin = first * width, end = last * width;
  while (row[begin] - max < exp_underflow<T>()) ++begin;
  while (row[end - 1] - max < exp_underflow<T>()) --end;
  return {begin, end};
}

// sum + the e^(row[k] - max) of keys [begin, end), each written to row[k], in order.
template <class T> T exp_into(T* row, std::size_t begin, std::size_t end, T max, T sum) {
  for (std::size_t k = begin; k < end; ++k) {
    const T shifted = row[k] - max;
    sum += (row[k] = shifted < exp_underflow<T>() ? T(0) : std::exp(shifted));
  }
  return sum;
}

template <class T> void divide(T* row, SoftmaxSupport span, T sum) {
  const T inv = T(1) / sum;
  for (std::size_t k = span.begin; k < span.end; ++k) row[k] *= inv;
}

// Summing over the span only leaves out exact zeros: the same sum.
template <class T> void softmax_exp(T* row, SoftmaxSupport span, T max) {
  divide(row, span, exp_into(row, span.begin, span.end, max, T(0)));
}

// The chunks of the span whose maximum underflows are zeroed without a test per
// key: the sum leaves out the same exact zeros, in the same order (the same numbers).
template <class T>
void softmax_exp(T* row, SoftmaxSupport span, const T* chunk_max, std::size_t width, T max) {
  T sum = 0;
  for (std::size_t chunk = span.begin / width; chunk * width < span.end; ++chunk) {
    const std::size_t begin = std::max(span.begin, chunk * width), end = std::min(span.end, (chunk + 1) * width);
    if (chunk_max[chunk] - max < exp_underflow<T>())
      std::fill(row + begin, row + end, T(0));
    else
      sum = exp_into(row, begin, end, max, sum);
  }
  divide(row, span, sum);
}

template <class T> SoftmaxSupport softmax_inplace(T* row, std::size_t n) {
  const T max = row_max(row, n);
  const SoftmaxSupport span = softmax_span(row, n, max);
  std::fill(row, row + span.begin, T(0));
  std::fill(row + span.end, row + n, T(0));
  softmax_exp(row, span, max);
  return span;
}

namespace {

template <class T> bool all_zero(const xt::xtensor<T, 2>& m) {
  return std::all_of(m.begin(), m.end(), [](T value) { return value == T(0); });
}

// r_delta for every offset delta in [-(H-1), H-1] x [-(W-1), W-1], one plane
// per component p of r (planes[p][(delta1 + H-1) * (2W-1) + delta2 + W-1]),
// so that the positional score of a row of keys is a contiguous loop.
template <class T> std::vector<std::vector<T>> encoding_planes(Encoding encoding, std::size_t height, std::size_t width) {
  const std::size_t d_p = std::size_t(encoding_dim(encoding)), span_w = 2 * width - 1;
  std::vector<std::vector<T>> planes(d_p, std::vector<T>((2 * height - 1) * span_w));
  std::vector<T> r(d_p);
  for (std::size_t a = 0; a < 2 * height - 1; ++a)
    for (std::size_t b = 0; b < span_w; ++b) {
      relative_encoding(encoding, int(a) - int(height - 1), int(b) - int(width - 1), r.data());
      for (std::size_t p = 0; p < d_p; ++p) planes[p][a * span_w + b] = r[p];
    }
  return planes;
}

// What a component r_p of the relative encoding (mhsa_layer.cpp,
// relative_encoding) depends on: delta1 only (constant along a key row),
// delta2 only (the same along every key row), or both.
enum class Varies { both, delta1, delta2 };
template <Encoding E> struct Components;
template <> struct Components<Encoding::quadratic> {  // |delta|^2, delta1, delta2
  static constexpr Varies of[] = {Varies::both, Varies::delta1, Varies::delta2};
};
template <> struct Components<Encoding::quadratic_general> {  // delta1^2, delta2^2, delta1 delta2, delta1, delta2
  static constexpr Varies of[] = {Varies::delta1, Varies::delta2, Varies::both, Varies::delta1, Varies::delta2};
};
template <> struct Components<Encoding::quadratic_1d> {  // delta2^2, delta2
  static constexpr Varies of[] = {Varies::delta2, Varies::delta2};
};

// One query's row of scores over all H x W keys, key row ki at out + ki W:
// out[k] = (content ? out[k] : 0) + key_bias[k] + a . r_(k - q) (Eq. 8, the last
// three terms), r read from the planes at offset + ki (2W - 1) for key row ki;
// chunk_max[ki] = row_max of key row ki (for softmax_span with chunks).
// A term a_p r_p that depends on delta1 only is one product per key row, one
// that depends on delta2 only one product per key column (kept in `column`,
// D_P x W scratch): the same products, summed over p in the same order, so the
// same numbers, with a third of the loads for the quadratic encoding.
template <class T, Encoding E>
ATTNCONV_AVX2_CLONES void positional_scores(const T* a, const T* const* planes, std::size_t offset, const T* key_bias,
                                            std::size_t height, std::size_t width, bool content, T* out,
                                            T* chunk_max, T* column) {
  constexpr auto& varies = Components<E>::of;
  constexpr std::size_t d_p = std::size(varies);
  const std::size_t span_w = 2 * width - 1;
  T coefficient[d_p];  // local copies: nothing written through `out` can change them
  for (std::size_t p = 0; p < d_p; ++p) coefficient[p] = a[p];
  for (std::size_t p = 0; p < d_p; ++p)
    if (varies[p] == Varies::delta2)
      for (std::size_t kj = 0; kj < width; ++kj) column[p * width + kj] = coefficient[p] * planes[p][offset + kj];
  for (std::size_t ki = 0; ki < height; ++ki, offset += span_w, key_bias += width, out += width) {
    const T* plane[d_p];
    T along_row[d_p];
    for (std::size_t p = 0; p < d_p; ++p) {
      plane[p] = planes[p] + offset;
      along_row[p] = varies[p] == Varies::delta1 ? coefficient[p] * plane[p][0] : T(0);
    }
    const auto positional = [&](std::size_t kj) {  // a . r_(k - q), summed over p in order
      return [&]<std::size_t... P>(std::index_sequence<P...>) {
        T sum = 0;
        const auto term = [&](auto p) {
          if constexpr (varies[p] == Varies::both) return coefficient[p] * plane[p][kj];
          else if constexpr (varies[p] == Varies::delta2) return column[p * width + kj];
          else return along_row[p];
        };
        ((sum += term(std::integral_constant<std::size_t, P>{})), ...);
        return sum;
      }(std::make_index_sequence<d_p>{});
    };
    if (content)
      for (std::size_t kj = 0; kj < width; ++kj) out[kj] += key_bias[kj] + positional(kj);
    else  // the same sum with the content term exactly 0
      for (std::size_t kj = 0; kj < width; ++kj) out[kj] = T(0) + (key_bias[kj] + positional(kj));
    *chunk_max++ = lanes_max(out, width);  // while the key row is in L1
  }
}

template <class T>
void add_positional_scores(Encoding encoding, const T* a, const std::vector<std::vector<T>>& planes,
                           std::size_t offset, const T* key_bias, std::size_t height, std::size_t width, bool content,
                           T* out, T* chunk_max, T* column) {
  const T* p[5] = {};
  for (std::size_t i = 0; i < planes.size(); ++i) p[i] = planes[i].data();
  switch (encoding) {
    case Encoding::quadratic:
      return positional_scores<T, Encoding::quadratic>(a, p, offset, key_bias, height, width, content, out, chunk_max,
                                                       column);
    case Encoding::quadratic_general:
      return positional_scores<T, Encoding::quadratic_general>(a, p, offset, key_bias, height, width, content, out,
                                                               chunk_max, column);
    case Encoding::quadratic_1d:
      return positional_scores<T, Encoding::quadratic_1d>(a, p, offset, key_bias, height, width, content, out,
                                                          chunk_max, column);
  }
  throw std::logic_error("dense engine: unsupported encoding");
}

}  // namespace

std::size_t dense_block_rows(std::size_t tokens, std::size_t requested) {
  if (requested) return std::min(requested, tokens);
  // About 2^16 scores per block (512 KiB in float64): a block stays in a core's L2.
  return std::min(tokens, std::max<std::size_t>((std::size_t(1) << 16) / std::max<std::size_t>(tokens, 1), 8));
}

template <class T>
Matrix<T> mhsa_dense(const MhsaLayer<T>& layer, const Matrix<T>& x, std::size_t height, std::size_t width,
                     const DenseOptions& options) {
  check_shapes(layer);
  const std::size_t n = height * width;
  if (x.shape(0) != n || x.shape(1) != layer.in_dim()) throw std::invalid_argument("mhsa_dense: input shape");
  const std::size_t d_h = layer.head_dim(), d_out = layer.out_dim();
  const std::size_t block = dense_block_rows(n, options.block), blocks = (n + block - 1) / block;
  const std::size_t span_w = 2 * width - 1;
  const auto planes = encoding_planes<T>(layer.encoding, height, width);

  // Per-thread scratch: one block of scores, its rows' softmax spans, its head output.
  const std::size_t threads = parallel_threads(blocks);
  std::vector<std::vector<T>> scores(threads, std::vector<T>(block * n)), head_out(threads, std::vector<T>(block * d_h));
  std::vector<std::vector<SoftmaxSupport>> spans(threads, std::vector<SoftmaxSupport>(block));
  std::vector<std::vector<T>> key_row_max(threads, std::vector<T>(height));  // of the current query's row
  std::vector<std::vector<T>> column(threads, std::vector<T>(planes.size() * width));  // positional_scores' scratch
  std::vector<double> skipped(threads, 0.0);

  // MHSA(X) = concat_h(SA_h(X)) W_out + b_out = sum_h SA_h(X) W_out^(h) + b_out,
  // accumulated head by head (in order) into y, so concat is never stored.
  Matrix<T> y = xt::zeros<T>({n, d_out});
  for (std::size_t h = 0; h < layer.heads.size(); ++h) {
    const AttentionHead<T>& head = layer.heads[h];
    const std::size_t d_k = head.w_qry.shape(1);
    // (X_q W_qry)(X_k W_key)^T is exactly zero when W_qry or W_key is: skip it.
    const bool content = !all_zero(head.w_qry) && !all_zero(head.w_key);
    const Matrix<T> query = product_rows(x, head.w_qry);  // X W_qry
    const Matrix<T> key = product_rows(x, head.w_key);    // X W_key
    const Matrix<T> value = product_rows(x, head.w_val);  // X W_val
    // (X_q W_qry + v) W^_key: the coefficient of r_delta in A_qk, per query.
    const Matrix<T> query_pos = product_rows(Matrix<T>(query + head.v), head.w_key_hat);
    // u . (X_k W_key): a bias per key.
    const Vector<T> key_bias = xt::sum(key * head.u, {1});
    const T* w_out_h = layer.w_out.data() + h * d_h * d_out;

    parallel_for(blocks, [&](std::size_t b, std::size_t t) {
      const std::size_t q0 = b * block, q1 = std::min(n, q0 + block), rows = q1 - q0;
      T* s = scores[t].data();
      if (content)
        gemm(rows, n, d_k, query.data() + q0 * d_k, d_k, key.data(), d_k, T(0), s, n, /*transpose_b=*/true);
      std::size_t key_begin = n, key_end = 0;  // keys with a non-zero weight in this block
      SoftmaxSupport* support = spans[t].data();
      T* chunk_max = key_row_max[t].data();
      for (std::size_t q = q0; q < q1; ++q) {
        T* row = s + (q - q0) * n;
        // offset of delta = k - q for key (0, 0), shifted to index the planes
        const std::size_t qi = q / width, qj = q % width, offset = (height - 1 - qi) * span_w + (width - 1 - qj);
        add_positional_scores(layer.encoding, &query_pos(q, 0), planes, offset, key_bias.data(), height, width,
                              content, row, chunk_max, column[t].data());
        const T max = lanes_max(chunk_max, height);
        const SoftmaxSupport span = support[q - q0] = softmax_span(row, chunk_max, height, width, max);
        softmax_exp(row, span, chunk_max, width, max);
        key_begin = std::min(key_begin, span.begin), key_end = std::max(key_end, span.end);
      }
      // P V reads keys [key_begin, key_end) of every row: zero there what lies outside the row's span.
      for (std::size_t r = 0; r < rows; ++r) {
        T* row = s + r * n;
        std::fill(row + key_begin, row + support[r].begin, T(0));
        std::fill(row + support[r].end, row + key_end, T(0));
      }
      // sum_k P_qk X_k W_val over the keys whose weight is not exactly 0
      skipped[t] += 2.0 * double(rows) * double(d_h) * double(n - (key_end - key_begin));
      T* o = head_out[t].data();
      gemm(rows, d_h, key_end - key_begin, s + key_begin, n, value.data() + key_begin * d_h, d_h, T(0), o, d_h);
      // y_q += SA_h(X)_q W_out^(h)
      gemm(rows, d_out, d_h, o, d_h, w_out_h, d_out, T(1), y.data() + q0 * d_out, d_out);
    });
  }
  y += xt::view(layer.b_out, xt::newaxis(), xt::all());
  if (options.stats)
    for (const double s : skipped) options.stats->flops_skipped += s;
  return y;
}

double dense_flops(std::size_t tokens, std::size_t d_in, std::size_t d_k, std::size_t d_p, std::size_t d_h,
                   std::size_t d_out, std::size_t heads) {
  const double n = double(tokens);
  const double per_head = 2 * n * d_in * (2.0 * d_k + d_h)  // X W_qry, X W_key, X W_val
                          + 2 * n * d_k * d_p               // (X W_qry + v) W^_key (the + v: n d_k more)
                          + n * d_k + 2 * n * d_k           // + v; u . (X_k W_key)
                          + 2 * n * n * d_k                 // (X_q W_qry)(X_k W_key)^T
                          + n * n * (2.0 * d_p + 2)         // a . r_delta, + bias, + into the row
                          + n * n * 5                       // softmax: max, - max, exp, sum, * inv
                          + 2 * n * n * d_h                 // P V
                          + 2 * n * d_h * d_out;            // SA_h W_out^(h), accumulated
  return heads * per_head + n * d_out;                      // + b_out
}

template float row_max(const float*, std::size_t);
template double row_max(const double*, std::size_t);
template SoftmaxSupport softmax_span(const float*, std::size_t, float);
template SoftmaxSupport softmax_span(const double*, std::size_t, double);
template SoftmaxSupport softmax_span(const float*, const float*, std::size_t, std::size_t, float);
template SoftmaxSupport softmax_span(const double*, const double*, std::size_t, std::size_t, double);
template void softmax_exp(float*, SoftmaxSupport, float);
template void softmax_exp(double*, SoftmaxSupport, double);
template void softmax_exp(float*, SoftmaxSupport, const float*, std::size_t, float);
template void softmax_exp(double*, SoftmaxSupport, const double*, std::size_t, double);
template SoftmaxSupport softmax_inplace(float*, std::size_t);
template SoftmaxSupport softmax_inplace(double*, std::size_t);
template Matrix<float> mhsa_dense(const MhsaLayer<float>&, const Matrix<float>&, std::size_t, std::size_t,
                                  const DenseOptions&);
template Matrix<double> mhsa_dense(const MhsaLayer<double>&, const Matrix<double>&, std::size_t, std::size_t,
                                   const DenseOptions&);

}  // namespace attnconv
