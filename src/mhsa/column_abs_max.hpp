#pragma once
// col_max[j] = max(col_max[j], |row[j]|) for j < n, NaN where either is (nan_max,
// mhsa/blas.hpp): the element-wise pass of max_abs_of_product_blocks, vectorised
// (no dependency chain; max is exact, so every clone gives the same numbers).
#include <cstddef>

namespace attnconv {

void column_abs_max(const float* row, std::size_t n, float* col_max);
void column_abs_max(const double* row, std::size_t n, double* col_max);

}  // namespace attnconv
