// OpenBLAS runs a kernel the CPU supports, not its generic fallback
// (parallel/blas_kernel.hpp; this program re-executed itself in tests/main.cpp).
#include <catch2/catch.hpp>

#include "parallel/blas_kernel.hpp"

using namespace attnconv;

TEST_CASE("OpenBLAS runs the kernel the CPU can run", "[blas_kernel]") {
  INFO("OpenBLAS kernel " << blas_kernel());
  CHECK(better_blas_kernel().empty());  // nothing left to switch to
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) CHECK(blas_kernel() != "Prescott");
}
