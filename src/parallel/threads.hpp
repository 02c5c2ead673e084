#pragma once
// Threads: one policy for the whole process, so that nothing oversubscribes
// the cores.
//
//   - OpenBLAS runs single-threaded (set once when the program starts).
//   - The engines (and the blocked convolution) split their own work over
//     engine_threads() threads, each thread calling the single-threaded BLAS
//     on its own rows. The split is over fixed chunks of rows, whose results
//     do not depend on which thread computes them: the numbers are
//     bit-identical for any thread count.
//   - With --jobs N (N cases in parallel) the runner sets engine threads to
//     max(1, cores / N); BLAS stays at one thread per job.
#include <cstddef>
#include <functional>

namespace attnconv {

// OpenBLAS's thread count (openblas_set_num_threads); 1 by default here.
void set_blas_threads(int threads);
int blas_threads();

// The threads an engine may use; defaults to the hardware's cores.
void set_engine_threads(int threads);
int engine_threads();

// Calls fn(i, t) for i in [0, count), spread over T = min(engine_threads(), count)
// threads: thread t in [0, T) takes i = t, t + T, ... (t indexes per-thread
// scratch; a thread that cannot be started leaves its t to the calling
// thread). Returns when all are done. If any fn throws, rethrows the exception
// of the smallest index that threw, for any thread count (indices past it may
// not run), so an error names the same item however the work was split.
void parallel_for(std::size_t count, const std::function<void(std::size_t, std::size_t)>& fn);

// The thread count parallel_for will use for `count` items (to size scratch).
std::size_t parallel_threads(std::size_t count);

}  // namespace attnconv
