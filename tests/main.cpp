#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "parallel/process_environment.hpp"

// The same OpenBLAS kernel and allocator settings as the attnconv program (parallel/process_environment.hpp),
// so that numbers computed here and by the program it starts agree.
int main(int argc, char** argv) {
  attnconv::use_best_environment(argv);
  return Catch::Session().run(argc, argv);
}
