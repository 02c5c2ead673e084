#pragma once
// Which OpenBLAS kernel runs the products. Debian 12's OpenBLAS (0.3.21, built
// with DYNAMIC_ARCH) picks its kernel from the CPU model when it is loaded; a
// model newer than its table (e.g. a Sapphire Rapids VM reporting "Intel(R)
// Xeon(R) Processor") gets the generic Prescott (SSE3) kernel, about 5x slower
// per core at dgemm than the SkylakeX (AVX-512) one the CPU can run. The
// documented override is the environment variable OPENBLAS_CORETYPE, read only
// when the library is loaded (OpenBLAS docs, "Runtime variables").
#include <string>

namespace attnconv {

// The kernel OpenBLAS chose (openblas_get_corename), e.g. "SkylakeX".
std::string blas_kernel();

// The kernel this CPU can run that OpenBLAS should have chosen, when it fell
// back to the generic one: "SkylakeX" (AVX-512 F/DQ/BW/VL), "Haswell" (AVX2 and
// FMA); empty when its own choice stands or OPENBLAS_CORETYPE is set. The program
// sets it before it starts (process_environment.hpp).
std::string better_blas_kernel();

}  // namespace attnconv
