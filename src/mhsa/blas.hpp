#pragma once
// Products of row-major matrices split over fixed chunks of rows on the engine
// threads (gemm: tensor/gemm.hpp), so that an engine can multiply in place
// without copies and the numbers do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

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

// max_{i,j} |(A B)_ij|, without holding A B: each fixed chunk of rows is
// multiplied into its thread's scratch and reduced there (max is exact, so the
// result does not depend on the chunking or the thread count).
template <class T> T max_abs_of_product(const Matrix<T>& a, const Matrix<T>& b) {
  const std::size_t m = a.shape(0), k = a.shape(1), n = b.shape(1);
  if (m == 0 || n == 0 || k == 0) return T(0);  // A B = 0 (or empty)
  const std::size_t chunks = (m + product_chunk_rows - 1) / product_chunk_rows;
  std::vector<std::vector<T>> scratch(parallel_threads(chunks), std::vector<T>(product_chunk_rows * n));
  std::vector<T> chunk_max(chunks, T(0));
  parallel_for(chunks, [&](std::size_t chunk, std::size_t thread) {
    const std::size_t r0 = chunk * product_chunk_rows, r1 = std::min(m, r0 + product_chunk_rows);
    T* c = scratch[thread].data();
    gemm(r1 - r0, n, k, a.data() + r0 * k, k, b.data(), n, T(0), c, n);
    // Four running maxima (max is exact: the order does not matter), four
    // short dependency chains instead of one long one.
    const std::size_t count = (r1 - r0) * n;
    T m[4] = {0, 0, 0, 0};
    std::size_t e = 0;
    for (; e + 4 <= count; e += 4)
      for (std::size_t l = 0; l < 4; ++l) m[l] = std::max(m[l], std::abs(c[e + l]));
    for (; e < count; ++e) m[0] = std::max(m[0], std::abs(c[e]));
    chunk_max[chunk] = std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
  });
  return *std::max_element(chunk_max.begin(), chunk_max.end());
}

}  // namespace attnconv
