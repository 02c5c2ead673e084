#pragma once
// The dense engine: the general Eq. 8 layer, streamed over blocks of queries
// (scores, softmax and the weighted sum of values per block), so memory is
// O(threads * block * HW + HW * D), never O((HW)^2 * heads). Heavy products go
// through OpenBLAS; blocks are spread over engine_threads() (parallel/threads.hpp).
// Exact shortcuts only: softmax weights that underflow to exactly 0 are not
// computed by exp, and the keys whose weight is 0 for every query of a block
// are left out of that block's product P V (they would add exact zeros).
#include <cstddef>

#include "mhsa/mhsa_layer.hpp"

namespace attnconv {

struct DenseStats {
  double flops_skipped = 0;  // of dense_flops(): the P V products left out because P was exactly 0
};

struct DenseOptions {
  // Queries per block; 0 picks dense_block_rows(tokens, 0).
  std::size_t block = 0;
  DenseStats* stats = nullptr;  // filled when given
};

// x: (H*W) x D_in tokens of an H x W image (row-major). Returns (H*W) x D_out.
template <class T>
Matrix<T> mhsa_dense(const MhsaLayer<T>& layer, const Matrix<T>& x, std::size_t height, std::size_t width,
                     const DenseOptions& options = {});

// The block size used for `tokens` keys (`requested` if non-zero).
std::size_t dense_block_rows(std::size_t tokens, std::size_t requested);

// The floating-point operations of the dense algorithm for one forward pass
// (a product m x k by k x n counts 2mnk; +, -, *, /, exp, max count 1 each).
double dense_flops(std::size_t tokens, std::size_t d_in, std::size_t d_k, std::size_t d_p, std::size_t d_h,
                   std::size_t d_out, std::size_t heads);

// The keys [begin, end) outside of which a softmax row is exactly 0.
struct SoftmaxSupport {
  std::size_t begin, end;
};

// The softmax of one row of scores, in place: subtract the row maximum, so that
// it stays exact at any scale of the scores (alpha = 1e4 included); a NaN
// score makes the maximum NaN and the span the whole row. The three
// steps, for a caller that zeroes only what it reads:
//   softmax_span:  the keys whose e^(row[k] - max) does not underflow to exactly 0;
//   softmax_exp:   row[k] = e^(row[k] - max) / sum over that span (the rest untouched);
//   softmax_inplace: both, and zeros outside the span.
template <class T> T row_max(const T* row, std::size_t n);
template <class T> SoftmaxSupport softmax_span(const T* row, std::size_t n, T max);
template <class T> void softmax_exp(T* row, SoftmaxSupport span, T max);
template <class T> SoftmaxSupport softmax_inplace(T* row, std::size_t n);
// The same span and weights for a row of `chunks` chunks of `width` keys, given
// each chunk's row_max (chunk_max; max = row_max of those): whole chunks whose
// maximum underflows are skipped, so neither rereads the row outside its span.
template <class T>
SoftmaxSupport softmax_span(const T* row, const T* chunk_max, std::size_t chunks, std::size_t width, T max);
template <class T> void softmax_exp(T* row, SoftmaxSupport span, const T* chunk_max, std::size_t width, T max);

}  // namespace attnconv
