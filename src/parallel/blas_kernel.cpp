#include "parallel/blas_kernel.hpp"

#include <unistd.h>

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

void use_best_blas_kernel(char** argv) {
  const std::string kernel = better_blas_kernel();
  if (kernel.empty()) return;
  // Set even if the exec fails, so that no child retries it.
  if (setenv("OPENBLAS_CORETYPE", kernel.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
}

}  // namespace attnconv
