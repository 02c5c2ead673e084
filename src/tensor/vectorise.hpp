#pragma once
// Hot loops compiled twice by GCC, for AVX2 and for baseline x86-64, the CPU
// choosing at load time (function multiversioning). AVX2 has no FMA, so the
// AVX2 clone does the same operations in the same order: the same numbers.
// Clang (the sanitizer and fuzz builds) cannot clone templates; there the
// baseline loop runs. (An attribute cannot be chosen by a function: a macro.)
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ATTNCONV_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define ATTNCONV_AVX2_CLONES
#endif
