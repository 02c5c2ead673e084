#pragma once
// Hot loops compiled three times by GCC, for AVX-512F, AVX2 and baseline
// x86-64, the CPU choosing at load time (function multiversioning). The build
// contracts no a*b+c into an FMA (-ffp-contract=off, CMakeLists.txt), so every
// clone does the same operations in the same order: the same numbers
// (tests/unit/test_fast_paths.cpp checks the bit-for-bit paths against the plain
// loops). Clang (the sanitizer and fuzz builds) cannot clone templates; there
// the baseline loop runs. (An attribute cannot be chosen by a function: a macro.)
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ATTNCONV_AVX2_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ATTNCONV_AVX2_CLONES
#endif
