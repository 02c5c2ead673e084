#pragma once
// Row-major GEMM on raw pointers (CBLAS, OpenBLAS): C = A op(B) + beta C, with
// leading dimensions, so that a caller can multiply a block of rows or a range
// of columns in place without copies.
// The CBLAS declarations xtensor-blas uses (the system <cblas.h> conflicts with them).
#include <xflens/cxxblas/drivers/cblas.h>

#include <cstddef>

namespace attnconv {

inline void gemm(std::size_t m, std::size_t n, std::size_t k, const double* a, std::size_t lda, const double* b,
                 std::size_t ldb, double beta, double* c, std::size_t ldc, bool transpose_b = false) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), 1.0, a,
              int(lda), b, int(ldb), beta, c, int(ldc));
}

inline void gemm(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda, const float* b,
                 std::size_t ldb, float beta, float* c, std::size_t ldc, bool transpose_b = false) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), 1.0f, a,
              int(lda), b, int(ldb), beta, c, int(ldc));
}

}  // namespace attnconv
