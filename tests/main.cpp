#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "parallel/blas_kernel.hpp"

// The same OpenBLAS kernel as the attnconv program runs (parallel/blas_kernel.hpp),
// so that numbers computed here and by the program it starts agree.
int main(int argc, char** argv) {
  attnconv::use_best_blas_kernel(argv);
  return Catch::Session().run(argc, argv);
}
