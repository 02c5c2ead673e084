// Cordonnier, Loukas & Jaggi, "On the Relationship between Self-Attention and
// Convolutional Layers", ICLR 2020, Lemma 1: concatenating the heads and then
// projecting equals summing the heads' own projections,
//   MHSA(X) = concat_h [SA_h(X)] W_out + b_out = sum_h SA_h(X) W_out^(h) + b_out,
// with SA_h(X) = softmax(X W_qry^(h) (X W_key^(h))^T) X W_val^(h) (Eq. 2) and
// W_out^(h) the D_h rows h D_h ... (h + 1) D_h - 1 of W_out. Both sides are
// computed here by plain loops, in the case's dtype.
#include <algorithm>
#include <cmath>
#include <vector>

#include <xtensor/xview.hpp>

#include "metrics/compare.hpp"
#include "proof/case_tensors.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"
#include "proof/vacuous.hpp"

namespace attnconv {
namespace {

struct Lemma1Params {
  std::size_t tokens = 0, in_channels = 0, heads = 0, head_dim = 0, key_dim = 0, out_channels = 0;
  Dtype dtype = Dtype::float64;
  std::uint64_t seed = 0;
};

TensorShapes expected_tensors(const Lemma1Params& p) {
  return {{"input", {p.tokens, p.in_channels}},
          {"w_qry", {p.heads, p.in_channels, p.key_dim}},
          {"w_key", {p.heads, p.in_channels, p.key_dim}},
          {"w_val", {p.heads, p.in_channels, p.head_dim}},
          {"w_out", {p.heads * p.head_dim, p.out_channels}},
          {"b_out", {p.out_channels}}};
}

// a (n x m) times b (m x k), the textbook triple loop.
template <class T> Matrix<T> product(const Matrix<T>& a, const Matrix<T>& b) {
  Matrix<T> out = xt::zeros<T>({a.shape(0), b.shape(1)});
  for (std::size_t i = 0; i < a.shape(0); ++i)
    for (std::size_t j = 0; j < b.shape(1); ++j)
      for (std::size_t k = 0; k < a.shape(1); ++k) out(i, j) += a(i, k) * b(k, j);
  return out;
}

// SA_h(X) = softmax_k(X_q W_qry (X_k W_key)^T) X W_val, the softmax over the keys k of each query q.
template <class T>
Matrix<T> self_attention(const Matrix<T>& x, const Matrix<T>& w_qry, const Matrix<T>& w_key, const Matrix<T>& w_val) {
  const Matrix<T> q = product(x, w_qry), k = product(x, w_key), v = product(x, w_val);
  Matrix<T> out = xt::zeros<T>({x.shape(0), w_val.shape(1)});
  for (std::size_t i = 0; i < x.shape(0); ++i) {
    std::vector<T> score(x.shape(0));
    for (std::size_t j = 0; j < x.shape(0); ++j)
      for (std::size_t d = 0; d < q.shape(1); ++d) score[j] += q(i, d) * k(j, d);
    const T top = *std::max_element(score.begin(), score.end());
    T total = 0;
    for (T& s : score) total += s = std::exp(s - top);
    for (std::size_t j = 0; j < x.shape(0); ++j)
      for (std::size_t d = 0; d < v.shape(1); ++d) out(i, d) += score[j] / total * v(j, d);
  }
  return out;
}

template <class T> Outcome verify(const Case& c, const Lemma1Params& p) {
  const CaseTensors tensors(c, p.seed);
  const Matrix<T> x = tensors.get<T, 2>("input", {p.tokens, p.in_channels});
  const xt::xtensor<T, 3> w_qry = tensors.get<T, 3>("w_qry", {p.heads, p.in_channels, p.key_dim});
  const xt::xtensor<T, 3> w_key = tensors.get<T, 3>("w_key", {p.heads, p.in_channels, p.key_dim});
  const xt::xtensor<T, 3> w_val = tensors.get<T, 3>("w_val", {p.heads, p.in_channels, p.head_dim});
  const Matrix<T> w_out = tensors.get<T, 2>("w_out", {p.heads * p.head_dim, p.out_channels});
  const Vector<T> b_out = tensors.get<T, 1>("b_out", {p.out_channels});

  // concat_h [SA_h(X)] (tokens x N_h D_h) and, beside it, sum_h SA_h(X) W_out^(h).
  Matrix<T> concat = xt::zeros<T>({p.tokens, p.heads * p.head_dim});
  Matrix<T> summed = xt::zeros<T>({p.tokens, p.out_channels});
  for (std::size_t h = 0; h < p.heads; ++h) {
    const Matrix<T> sa = self_attention<T>(x, xt::view(w_qry, h), xt::view(w_key, h), xt::view(w_val, h));
    const Matrix<T> w_out_h = xt::view(w_out, xt::range(h * p.head_dim, (h + 1) * p.head_dim), xt::all());
    for (std::size_t t = 0; t < p.tokens; ++t)
      for (std::size_t d = 0; d < p.head_dim; ++d) concat(t, h * p.head_dim + d) = sa(t, d);
    summed += product(sa, w_out_h);
  }
  Matrix<T> projected = product(concat, w_out);
  for (std::size_t t = 0; t < p.tokens; ++t)
    for (std::size_t o = 0; o < p.out_channels; ++o) projected(t, o) += b_out(o), summed(t, o) += b_out(o);

  Outcome out;
  set_distance(out, compare(projected, summed));
  vacuous_if_zero(out, "the input", x, "b_out");
  vacuous_if_zero(out, "W_val (the layer's values)", w_val, "b_out");
  vacuous_if_zero(out, "W_out", w_out, "b_out");
  out.tensors = {{"input", xt::xarray<T>(x)},
                 {"expected", xt::xarray<T>(summed)},
                 {"actual", xt::xarray<T>(projected)},
                 {"w_out", xt::xarray<T>(w_out)},
                 {"w_qry", xt::xarray<T>(w_qry)},
                 {"w_key", xt::xarray<T>(w_key)},
                 {"w_val", xt::xarray<T>(w_val)},
                 {"b_out", xt::xarray<T>(b_out)}};
  return out;
}

// Bytes at the peak (the outcome built): each term twice, the tensors and their copies in the outcome.
double memory_estimate(const Case&, const Lemma1Params& p) {
  const double s = double(dtype_bytes(p.dtype)), t = double(p.tokens), d_in = double(p.in_channels);
  const double heads = double(p.heads), d_h = double(p.head_dim), d_k = double(p.key_dim), d_out = double(p.out_channels);
  const double weights = heads * d_in * (2 * d_k + d_h) + heads * d_h * d_out + d_out;  // W_qry, W_key, W_val; W_out; b_out
  const double tokens = t * (d_in + heads * d_h + 2 * d_out);  // X, concat, summed and projected
  const double head = t * (2 * d_k + 2 * d_h + d_out) + t;      // one head's Q, K, V, SA_h, SA_h W_out^(h), its scores
  return process_bytes + s * (2 * (weights + tokens) + head);
}

using P = Lemma1Params;
const bool registered = register_proof(make_proof<P>({
    .id = "cordonnier2020.lemma1",
    .paper = "Cordonnier, Loukas & Jaggi, On the Relationship between Self-Attention and Convolutional Layers, ICLR "
             "2020, Lemma 1",
    .statement = "Multi-head self-attention concatenates the heads and projects: concat_h [SA_h(X)] W_out + b_out; "
                 "this equals sum_h SA_h(X) W_out^(h) + b_out, with W_out^(h) the rows of W_out for head h.",
    .params = {field(&P::tokens, size_param("tokens", "T, the number of tokens", 4096)),
               field(&P::in_channels, size_param("in_channels", "D_in", 4096)),
               field(&P::heads, size_param("heads", "N_h", 4096)),
               field(&P::head_dim, size_param("head_dim", "D_h", 4096)),
               field(&P::key_dim, size_param("key_dim", "D_k, the query and key dimension", 4096)),
               field(&P::out_channels, size_param("out_channels", "D_out", 4096)), field(&P::dtype, dtype_param()),
               field(&P::seed, seed_param())},
    .tensors = {"input", "w_qry", "w_key", "w_val", "w_out", "b_out"},
    .verify = {verify<float>, verify<double>},
    .metrics = distance_metrics("concat-then-project against the sum of per-head projections"),
    .dumps = {{"input", "(T, D_in)"},
               {"w_out", "(N_h D_h, D_out)"},
               {"expected", "sum_h SA_h(X) W_out^(h) + b_out, (T, D_out)"},
               {"actual", "concat_h SA_h(X) W_out + b_out, (T, D_out)"},
               {"w_qry", "(N_h, D_in, D_k)"},
               {"w_key", "(N_h, D_in, D_k)"},
               {"w_val", "(N_h, D_in, D_h)"},
               {"b_out", "(D_out)"}},
    .memory_estimate = memory_estimate,
    .expected_tensors = expected_tensors,
}));

}  // namespace
}  // namespace attnconv
