#include "mhsa/separable_engine.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "parallel/threads.hpp"
#include "mhsa/blas.hpp"
#include "mhsa/dense_engine.hpp"
#include "tensor/vectorise.hpp"

#include <xtensor/xview.hpp>

namespace attnconv {
namespace {

template <class T> bool all_zero(const xt::xtensor<T, 1>& m) {
  return std::all_of(m.begin(), m.end(), [](T value) { return value == T(0); });
}
template <class T> bool all_zero(const xt::xtensor<T, 2>& m) {
  return std::all_of(m.begin(), m.end(), [](T value) { return value == T(0); });
}

// a = W^_key^T v: the coefficients of r_delta in the score of a head without content terms.
template <class T> Vector<T> positional_coefficients(const AttentionHead<T>& head) {
  const std::size_t d_k = head.w_key_hat.shape(0), d_p = head.w_key_hat.shape(1);
  Vector<T> a = xt::zeros<T>({d_p});
  for (std::size_t k = 0; k < d_k; ++k)
    for (std::size_t p = 0; p < d_p; ++p) a(p) += head.v(k) * head.w_key_hat(k, p);
  return a;
}

// A 1D attention: for each of the queries q_i (i < queries), the softmax over
// the keys k < keys of score(k - q_i), and each row's non-zero support.
template <class T> struct Attention1d {
  std::size_t queries, keys;
  std::vector<T> p;  // queries x keys
  std::vector<SoftmaxSupport> support;
};

// `score` holds score(d) at d + keys - 1 for every offset d = k - q_i in
// (-keys, keys): the rows' softmaxes in parallel (each row on its own: the
// numbers do not depend on the thread count).
template <class T, class Query>
Attention1d<T> attention_1d(std::size_t queries, std::size_t keys, const Query& query, const std::vector<T>& score) {
  Attention1d<T> att{queries, keys, std::vector<T>(queries * keys), std::vector<SoftmaxSupport>(queries)};
  parallel_for(queries, [&](std::size_t i, std::size_t) {
    T* row = &att.p[i * keys];
    const T* s = &score[keys - 1 - query(i)];  // s[k] = score(k - q_i)
    std::copy(s, s + keys, row);
    att.support[i] = softmax_inplace(row, keys);
  });
  return att;
}

// The 1D attentions already made, by their score table: heads whose score
// along an axis is the same function (bit for bit: in Theorem 1's
// construction, the heads of one kernel row or column) share it.
template <class T> struct Attention1dCache {
  std::vector<std::pair<std::vector<T>, Attention1d<T>>> made;
  template <class Query>
  const Attention1d<T>& get(std::size_t queries, std::size_t keys, const Query& query, std::vector<T> score) {
    for (const auto& [table, att] : made)
      if (table == score) return att;
    Attention1d<T> att = attention_1d<T>(queries, keys, query, score);
    return made.emplace_back(std::move(score), std::move(att)).second;
  }
};

// out[e] = (((0 + w[0] x_0[e]) + w[1] x_1[e]) + ...) for e < n, the terms
// x_t = x + t * stride in order: each output is summed in registers over the
// taps, a block of 8 at a time (tensor/vectorise.hpp: AVX-512/AVX2 clones with
// the same numbers), so it is read and written once instead of once per tap.
template <class T>
ATTNCONV_AVX2_CLONES void weighted_sum(const T* w, std::size_t taps, const T* x, std::size_t stride, std::size_t n,
                                       T* out) {
  constexpr std::size_t lanes = 8;
  std::size_t e = 0;
  for (; e + lanes <= n; e += lanes) {
    T acc[lanes] = {};
    for (std::size_t t = 0; t < taps; ++t) {
      const T* from = x + t * stride + e;
      for (std::size_t l = 0; l < lanes; ++l) acc[l] += w[t] * from[l];
    }
    for (std::size_t l = 0; l < lanes; ++l) out[e + l] = acc[l];
  }
  for (; e < n; ++e) {
    T acc = 0;
    for (std::size_t t = 0; t < taps; ++t) acc += w[t] * x[t * stride + e];
    out[e] = acc;
  }
}

// Along image rows: P_cols on each of the H rows of pixels of Z ((H*W) x C
// tokens), into `along_width` (H x queries_cols x C). Only each row's support
// is summed (the weights outside it are exactly 0).
template <class T>
void apply_cols(const Attention1d<T>& cols, std::size_t height, const T* z, std::size_t c, T* along_width) {
  const std::size_t width = cols.keys;
  parallel_for(height, [&](std::size_t ki, std::size_t) {
    for (std::size_t qj = 0; qj < cols.queries; ++qj) {
      const SoftmaxSupport s = cols.support[qj];
      weighted_sum(&cols.p[qj * width + s.begin], s.end - s.begin, z + (ki * width + s.begin) * c, c, c,
                   along_width + (ki * cols.queries + qj) * c);
    }
  });
}

// Then along columns: P_rows on the rows of `along_width`, for query row qi of the
// attention: `out` (queries_cols x C) = sum_ki P_rows[qi, ki] along_width[ki].
template <class T>
void apply_rows(const Attention1d<T>& rows, std::size_t qi, const T* along_width, std::size_t row_len, T* out) {
  const SoftmaxSupport s = rows.support[qi];
  weighted_sum(&rows.p[qi * rows.keys + s.begin], s.end - s.begin, along_width + s.begin * row_len, row_len, row_len,
               out);
}

// (P_rows (x) P_cols) Z into `out` ((queries_rows * queries_cols) x C).
template <class T>
void apply_separable(const Attention1d<T>& rows, const Attention1d<T>& cols, const T* z, std::size_t c,
                     T* along_width, T* out) {
  apply_cols(cols, rows.keys, z, c, along_width);
  const std::size_t row_len = cols.queries * c;
  parallel_for(rows.queries, [&](std::size_t qi, std::size_t) {
    apply_rows(rows, qi, along_width, row_len, out + qi * row_len);
  });
}

template <class T> bool same_attention(const Attention1d<T>& a, const Attention1d<T>& b) {
  if (a.queries != b.queries || a.keys != b.keys || a.p != b.p) return false;
  for (std::size_t i = 0; i < a.queries; ++i)
    if (a.support[i].begin != b.support[i].begin || a.support[i].end != b.support[i].end) return false;
  return true;
}

// A head attended on the input side (D_in channels): its row attention and
// W_val^(h) W_out^(h).
template <class T> struct InputSideHead {
  Attention1d<T> rows;
  Matrix<T> w_val_out;
};

// Heads on the input side that share one column attention (the heads of one
// kernel column: the same Delta_2): P_cols X is computed once for all of them,
// and their products with W_val W_out are one product over their
// concatenated D_in channels (Cordonnier et al., Eq. 3: concat_h, then W_out).
template <class T> struct ColumnGroup {
  Attention1d<T> cols;
  std::vector<InputSideHead<T>> heads;
};

// y += sum_{h in group} (P_rows^h (x) P_cols) X (W_val^h W_out^h) at the queries,
// over fixed chunks of query rows (the numbers do not depend on the thread
// count): per chunk, the heads' attended inputs side by side,
// (chunk queries) x (heads * D_in), times the heads' W_val W_out stacked.
template <class T>
void add_column_group(const ColumnGroup<T>& group, std::size_t height, const T* x, std::size_t d_in,
                      std::size_t d_out, T* along_width, T* y) {
  const std::size_t heads = group.heads.size(), q_rows = group.heads[0].rows.queries, q_cols = group.cols.queries;
  if (q_rows == 0 || q_cols == 0) return;  // no query
  apply_cols(group.cols, height, x, d_in, along_width);
  const std::size_t row_len = q_cols * d_in, k = heads * d_in;
  Matrix<T> stacked({k, d_out});
  for (std::size_t i = 0; i < heads; ++i)
    std::copy(group.heads[i].w_val_out.begin(), group.heads[i].w_val_out.end(), stacked.begin() + i * d_in * d_out);
  // About 2^18 entries (2 MiB in float64) of attended inputs per chunk, at least one query row.
  const std::size_t chunk_rows = std::clamp<std::size_t>((std::size_t(1) << 18) / std::max<std::size_t>(q_cols * k, 1), 1, q_rows);
  const std::size_t chunks = (q_rows + chunk_rows - 1) / chunk_rows;
  std::vector<std::vector<T>> scratch(parallel_threads(chunks), std::vector<T>(chunk_rows * q_cols * k));
  parallel_for(chunks, [&](std::size_t chunk, std::size_t thread) {
    const std::size_t r0 = chunk * chunk_rows, r1 = std::min(q_rows, r0 + chunk_rows);
    T* attended = scratch[thread].data();
    for (std::size_t qi = r0; qi < r1; ++qi)
      for (std::size_t i = 0; i < heads; ++i) {
        const Attention1d<T>& rows = group.heads[i].rows;
        const SoftmaxSupport s = rows.support[qi];
        const T* p = &rows.p[qi * rows.keys + s.begin];
        for (std::size_t qj = 0; qj < q_cols; ++qj)
          weighted_sum(p, s.end - s.begin, along_width + s.begin * row_len + qj * d_in, row_len, d_in,
                       attended + (((qi - r0) * q_cols + qj) * heads + i) * d_in);
      }
    gemm((r1 - r0) * q_cols, d_out, k, attended, k, stacked.data(), d_out, T(1), y + r0 * q_cols * d_out, d_out);
  });
}

}  // namespace

template <class T> std::string separable_refusal(const MhsaLayer<T>& layer) {
  for (std::size_t h = 0; h < layer.heads.size(); ++h) {
    const AttentionHead<T>& head = layer.heads[h];
    const std::string which = "head " + std::to_string(h) + ": ";
    if (!all_zero(head.w_qry)) return which + "W_qry is not zero (content term (X_q W_qry)(X_k W_key)^T)";
    if (!all_zero(head.u) && !all_zero(head.w_key)) return which + "u and W_key are not zero (content term u.(X_k W_key))";
    if (layer.encoding == Encoding::quadratic_general && positional_coefficients(head)(2) != T(0))
      return which + "the quadratic_general encoding has a non-zero delta1*delta2 coefficient: the score does not split";
  }
  return "";
}

template <class T>
Matrix<T> mhsa_separable(const MhsaLayer<T>& layer, const Matrix<T>& x, std::size_t height, std::size_t width) {
  return mhsa_separable(layer, x, height, width, QueryGrid::all(height, width));
}

template <class T>
Matrix<T> mhsa_separable(const MhsaLayer<T>& layer, const Matrix<T>& x, std::size_t height, std::size_t width,
                         const QueryGrid& queries) {
  check_shapes(layer);
  if (!separable_exact(layer))
    throw std::invalid_argument("the separable engine is not exact for this layer: " + separable_refusal(layer));
  const std::size_t n = height * width, n_q = queries.size();
  if (x.shape(0) != n || x.shape(1) != layer.in_dim()) throw std::invalid_argument("mhsa_separable: input shape");
  if (!queries.within(height, width)) throw std::invalid_argument("mhsa_separable: queries outside the image");
  const std::size_t d_in = layer.in_dim(), d_h = layer.head_dim(), d_out = layer.out_dim();
  const std::size_t d_p = std::size_t(encoding_dim(layer.encoding));

  Matrix<T> y = xt::zeros<T>({n_q, d_out});
  if (n == 0) return y;  // an empty image: no query either (queries.within)
  std::vector<T> r(d_p);
  // Work buffers, reused by every head (fresh pages per head cost more than the arithmetic).
  const std::size_t c_max = std::max(d_in, d_h);
  std::vector<T> along_width(height * queries.count[1] * c_max);
  std::vector<T> value, attended;  // the value side's, allocated when a head needs them
  std::vector<ColumnGroup<T>> groups;
  Attention1dCache<T> rows_made, cols_made;
  for (std::size_t h = 0; h < layer.heads.size(); ++h) {
    const AttentionHead<T>& head = layer.heads[h];
    if (all_zero(head.w_val)) continue;  // SA_h(X) = 0 exactly: adds nothing
    const Vector<T> a = positional_coefficients(head);
    // a . r_delta = f(delta1) + g(delta2), f(d) = a . r_(d, 0), g(d) = a . r_(0, d) (r_(0,0) = 0).
    const auto score = [&](int delta1, int delta2) {
      relative_encoding(layer.encoding, delta1, delta2, r.data());
      T s = 0;
      for (std::size_t p = 0; p < d_p; ++p) s += a(p) * r[p];
      return s;
    };
    // f(d) and g(d) for every offset d = k - q of a key and a query along each axis
    const auto table = [](std::size_t keys, const auto& f) {
      std::vector<T> out(2 * keys - 1);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = f(int(i) - int(keys - 1));
      return out;
    };
    Attention1d<T> p_rows = rows_made.get(queries.count[0], height, [&](std::size_t i) { return queries.at(0, i); },
                                          table(height, [&](int d) { return score(d, 0); }));
    Attention1d<T> p_cols = cols_made.get(queries.count[1], width, [&](std::size_t j) { return queries.at(1, j); },
                                          table(width, [&](int d) { return score(0, d); }));
    const Matrix<T> w_out_h = xt::view(layer.w_out, xt::range(h * d_h, (h + 1) * d_h), xt::all());

    // SA_h(X) W_out^(h) = P (X W_val) W_out^(h) = (P X)(W_val W_out^(h)): attend on the
    // narrower side (D_in channels, or D_h), whichever costs fewer operations.
    std::size_t work = 0;
    for (const auto& s : p_cols.support) work += (s.end - s.begin) * height;
    for (const auto& s : p_rows.support) work += (s.end - s.begin) * queries.count[1];
    const double cost_input_side = double(work) * d_in + double(n_q) * d_in * d_out + double(d_in) * d_h * d_out;
    const double cost_value_side = double(n) * d_in * d_h + double(work) * d_h + double(n_q) * d_h * d_out;
    if (cost_input_side < cost_value_side) {  // collected, added below by column attention
      InputSideHead<T> input_head{std::move(p_rows), product_rows(head.w_val, w_out_h)};
      const auto same = std::find_if(groups.begin(), groups.end(),
                                     [&](const ColumnGroup<T>& g) { return same_attention(g.cols, p_cols); });
      ColumnGroup<T>& group = same != groups.end() ? *same : groups.emplace_back(ColumnGroup<T>{std::move(p_cols), {}});
      group.heads.push_back(std::move(input_head));
    } else {
      value.resize(n * d_h), attended.resize(n_q * c_max);
      product_rows_into(n, d_in, d_h, x.data(), head.w_val.data(), T(0), value.data());
      apply_separable(p_rows, p_cols, value.data(), d_h, along_width.data(), attended.data());
      product_rows_into(n_q, d_h, d_out, attended.data(), w_out_h.data(), T(1), y.data());
    }
  }
  for (const ColumnGroup<T>& group : groups)
    add_column_group(group, height, x.data(), d_in, d_out, along_width.data(), y.data());
  y += xt::view(layer.b_out, xt::newaxis(), xt::all());
  return y;
}

double separable_flops(std::size_t height, std::size_t width, std::size_t d_in, std::size_t d_p, std::size_t d_h,
                       std::size_t d_out, std::size_t heads) {
  return separable_flops(height, width, d_in, d_p, d_h, d_out, heads, QueryGrid::all(height, width));
}

double separable_flops(std::size_t height, std::size_t width, std::size_t d_in, std::size_t d_p, std::size_t d_h,
                       std::size_t d_out, std::size_t heads, const QueryGrid& queries) {
  const double hh = double(height), ww = double(width), n = hh * ww;
  const double qh = double(queries.count[0]), qw = double(queries.count[1]), n_q = qh * qw;
  const double softmax_1d = (qh * hh + qw * ww) * (2.0 * d_p + 5);  // scores a . r, then as dense_flops
  const double per_head = 2.0 * n * d_in * d_h                             // X W_val
                          + softmax_1d + 2.0 * (hh * qw * ww + qh * hh * qw) * d_h  // P_cols, then P_rows, on D_h channels
                          + 2.0 * n_q * d_h * d_out;                       // SA_h W_out^(h), accumulated
  return heads * per_head + n_q * d_out;
}

template std::string separable_refusal(const MhsaLayer<float>&);
template std::string separable_refusal(const MhsaLayer<double>&);
template Matrix<float> mhsa_separable(const MhsaLayer<float>&, const Matrix<float>&, std::size_t, std::size_t);
template Matrix<double> mhsa_separable(const MhsaLayer<double>&, const Matrix<double>&, std::size_t, std::size_t);
template Matrix<float> mhsa_separable(const MhsaLayer<float>&, const Matrix<float>&, std::size_t, std::size_t,
                                      const QueryGrid&);
template Matrix<double> mhsa_separable(const MhsaLayer<double>&, const Matrix<double>&, std::size_t, std::size_t,
                                       const QueryGrid&);

}  // namespace attnconv
