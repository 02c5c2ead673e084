#pragma once
// The dense engine: the general Eq. 8 layer, streamed over blocks of queries
// (scores, softmax and the weighted sum of values per block), so memory is
// O(block * HW + HW * D), never O((HW)^2 * heads). Heavy products go through
// xtensor-blas (OpenBLAS).
#include <cstddef>

#include "mhsa/mhsa_layer.hpp"

namespace attnconv {

struct DenseOptions {
  // Queries per block; 0 picks a block so that one block of scores holds about
  // 2^20 entries.
  std::size_t block = 0;
};

// x: (H*W) x D_in tokens of an H x W image (row-major). Returns (H*W) x D_out.
template <class T>
Matrix<T> mhsa_dense(const MhsaLayer<T>& layer, const Matrix<T>& x, std::size_t height, std::size_t width,
                     const DenseOptions& options = {});

// The softmax of one row of scores, in place: subtract the row maximum, so that
// it stays exact at any scale of the scores (alpha = 1e4 included).
template <class T> void softmax_inplace(T* row, std::size_t n);

}  // namespace attnconv
