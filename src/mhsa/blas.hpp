#pragma once
// Products of row-major matrices split over fixed chunks of rows on the engine
// threads (gemm: tensor/gemm.hpp), so that an engine can multiply in place
// without copies and the numbers do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "mhsa/column_abs_max.hpp"
#include "parallel/threads.hpp"
#include "tensor/gemm.hpp"
#include "tensor/tensor.hpp"

namespace attnconv {

// Rows per chunk of the parallel products below: fixed, so that the numbers
// do not depend on the thread count.
constexpr std::size_t product_chunk_rows = 512;

// C = A B + beta C for row-major m x k A, k x n B, m x n C, split over fixed
// chunks of rows of A and C.
template <class T>
void product_rows_into(std::size_t m, std::size_t k, std::size_t n, const T* a, const T* b, T beta, T* c) {
  const std::size_t chunks = (m + product_chunk_rows - 1) / product_chunk_rows;
  parallel_for(chunks, [&](std::size_t chunk, std::size_t) {
    const std::size_t r0 = chunk * product_chunk_rows, r1 = std::min(m, r0 + product_chunk_rows);
    gemm(r1 - r0, n, k, a + r0 * k, k, b, n, beta, c + r0 * n, n);
  });
}

// C += A B (accumulate) or C = A B.
template <class T> void product_rows_into(const Matrix<T>& a, const Matrix<T>& b, Matrix<T>& c, bool accumulate) {
  product_rows_into(a.shape(0), a.shape(1), b.shape(1), a.data(), b.data(), accumulate ? T(1) : T(0), c.data());
}

template <class T> Matrix<T> product_rows(const Matrix<T>& a, const Matrix<T>& b) {
  Matrix<T> c({a.shape(0), b.shape(1)});
  if (a.shape(1) == 0) c.fill(T(0));
  else product_rows_into(a, b, c, false);
  return c;
}

// max(a, b), NaN when either is (std::max(a, NaN) = a would hide a NaN).
template <class T> T nan_max(T a, T b) { return b > a || b != b ? b : a; }

// For each block of `block_cols` consecutive columns of B (the last one may be
// narrower): max |(A B)_ij| over the rows i and that block's columns j, without
// holding A B. A fixed chunk of rows of A is multiplied by all of B at once
// (one product per chunk: A's rows are packed once for every block, however
// many blocks there are) into its thread's scratch and reduced there. max is
// exact, so the result depends neither on the chunking nor on the thread count;
// a NaN entry makes its block's maximum NaN.
template <class T>
std::vector<T> max_abs_of_product_blocks(const Matrix<T>& a, const Matrix<T>& b, std::size_t block_cols) {
  const std::size_t m = a.shape(0), k = a.shape(1), n = b.shape(1);
  const std::size_t blocks = block_cols == 0 ? 0 : (n + block_cols - 1) / block_cols;
  std::vector<T> out(blocks, T(0));
  if (m == 0 || n == 0 || k == 0) return out;  // A B = 0 (or empty)
  // About 2^19 entries of A B per chunk (2 MiB in float32), 8 to 512 rows.
  const std::size_t rows = std::clamp<std::size_t>((std::size_t(1) << 19) / n, 8, 512);
  const std::size_t chunks = (m + rows - 1) / rows;
  std::vector<std::vector<T>> scratch(parallel_threads(chunks), std::vector<T>(rows * n)), column_max(scratch.size());
  std::vector<T> chunk_max(chunks * blocks, T(0));
  parallel_for(chunks, [&](std::size_t chunk, std::size_t thread) {
    const std::size_t r0 = chunk * rows, r1 = std::min(m, r0 + rows);
    T* c = scratch[thread].data();
    gemm(r1 - r0, n, k, a.data() + r0 * k, k, b.data(), n, T(0), c, n);
    // Each column's maximum over the chunk's rows first (element by element, no
    // dependency chain: vectorised), then each block's over its columns.
    std::vector<T>& col_max = column_max[thread];
    col_max.assign(n, T(0));
    for (std::size_t i = 0; i < r1 - r0; ++i) column_abs_max(c + i * n, n, col_max.data());
    for (std::size_t block = 0; block < blocks; ++block) {
      const std::size_t j0 = block * block_cols, j1 = std::min(n, j0 + block_cols);
      T block_max = T(0);
      for (std::size_t j = j0; j < j1; ++j) block_max = nan_max(block_max, col_max[j]);
      chunk_max[chunk * blocks + block] = block_max;
    }
  });
  for (std::size_t chunk = 0; chunk < chunks; ++chunk)
    for (std::size_t block = 0; block < blocks; ++block)
      out[block] = nan_max(out[block], chunk_max[chunk * blocks + block]);
  return out;
}

// max_{i,j} |(A B)_ij|, without holding A B.
template <class T> T max_abs_of_product(const Matrix<T>& a, const Matrix<T>& b) {
  const std::vector<T> block = max_abs_of_product_blocks(a, b, std::max<std::size_t>(b.shape(1), 1));
  return block.empty() ? T(0) : block[0];
}

}  // namespace attnconv
