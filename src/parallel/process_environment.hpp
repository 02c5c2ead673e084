#pragma once
// The environment this program runs best in, which only takes effect when a
// process starts: the program re-executes itself once (/proc/self/exe, the same
// arguments) with it, before it has done anything.
//
// - OPENBLAS_CORETYPE: the kernel the CPU can run when OpenBLAS fell back to its
//   generic one (better_blas_kernel(), blas_kernel.hpp).
// - GLIBC_TUNABLES glibc.malloc.hugetlb=1 when the kernel gives transparent huge
//   pages only to memory that asks for them ("[madvise]" in
//   /sys/kernel/mm/transparent_hugepage/enabled): glibc's malloc then asks for its
//   heap and large blocks (glibc manual, "Memory Allocation Tunables"). Every case
//   runs in a fresh process (run/executor.hpp) whose tensors land on untouched
//   memory; one fault per 2 MiB instead of per 4 KiB (ResNet-50's 106 cases on a
//   2-core VM: 1.27 M page faults and 27 s, with this 0.28 M and 9.4 s; see
//   docs/performance.md, "Page faults"). Memory placement only: no number changes.
//
// Set variables are left alone (a user's OPENBLAS_CORETYPE, a GLIBC_TUNABLES that
// names hugetlb); a tunable string is extended, never replaced. Returns only when
// nothing needed changing or the exec failed (the program then runs as it is).
// Call first in main().
namespace attnconv {

void use_best_environment(char** argv);

}  // namespace attnconv
