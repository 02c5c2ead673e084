#include "parallel/blas_kernel.hpp"

#include <cstdlib>

extern "C" char* openblas_get_corename(void);

namespace attnconv {

std::string blas_kernel() { return openblas_get_corename(); }

std::string better_blas_kernel() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr || blas_kernel() != "Prescott") return "";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

}  // namespace attnconv
