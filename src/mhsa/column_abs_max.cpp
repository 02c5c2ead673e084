#include "mhsa/column_abs_max.hpp"

#include <cmath>

#include "mhsa/blas.hpp"
#include "tensor/vectorise.hpp"

namespace attnconv {

namespace {

template <class T> inline void column_abs_max_loop(const T* __restrict row, std::size_t n, T* __restrict col_max) {
  for (std::size_t j = 0; j < n; ++j) col_max[j] = nan_max(col_max[j], std::abs(row[j]));
}

}  // namespace

ATTNCONV_AVX2_CLONES void column_abs_max(const float* row, std::size_t n, float* col_max) {
  column_abs_max_loop(row, n, col_max);
}
ATTNCONV_AVX2_CLONES void column_abs_max(const double* row, std::size_t n, double* col_max) {
  column_abs_max_loop(row, n, col_max);
}

}  // namespace attnconv
