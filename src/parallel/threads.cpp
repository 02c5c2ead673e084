#include "parallel/threads.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

extern "C" {
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
}

namespace attnconv {
namespace {

int hardware_cores() { return std::max(1, int(std::thread::hardware_concurrency())); }

std::atomic<int>& engine_thread_count() {
  static std::atomic<int> count{hardware_cores()};
  return count;
}

// BLAS single-threaded from the start: the engines call it from their own threads.
const bool blas_single_threaded = [] {
  openblas_set_num_threads(1);
  return true;
}();

}  // namespace

void set_blas_threads(int threads) { openblas_set_num_threads(std::max(1, threads)); }
int blas_threads() { return openblas_get_num_threads(); }

void set_engine_threads(int threads) { engine_thread_count() = std::max(1, threads); }
int engine_threads() { return engine_thread_count(); }

std::size_t parallel_threads(std::size_t count) {
  return std::max<std::size_t>(1, std::min<std::size_t>(std::size_t(engine_threads()), count));
}

void parallel_for(std::size_t count, const std::function<void(std::size_t, std::size_t)>& fn) {
  const std::size_t threads = parallel_threads(count);
  if (threads <= 1) {
    for (std::size_t i = 0; i < count; ++i) fn(i, 0);
    return;
  }
  // The exception of the smallest index that threw, whatever the thread count:
  // a thread stops once its next index is at or past the smallest failure so far, so
  // every index below the one finally recorded has run (and did not throw).
  std::exception_ptr error;
  std::size_t error_index = count;
  std::atomic<std::size_t> first_failure{count};
  std::mutex error_mutex;
  const auto work = [&](std::size_t t) {
    for (std::size_t i = t; i < count && i < first_failure.load(); i += threads) {
      try {
        fn(i, t);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (i < error_index) {
          error_index = i;
          error = std::current_exception();
          first_failure.store(i);
        }
        return;
      }
    }
  };
  // A thread that cannot be started (std::thread throws) is not an error: this
  // thread runs its indices after its own, with the same numbers, rather than
  // leaving the started threads joinable (std::terminate).
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  std::size_t started = 1;
  try {
    for (; started < threads; ++started) pool.emplace_back(work, started);
  } catch (const std::system_error&) {
  } catch (const std::bad_alloc&) {
  }
  work(0);
  for (std::size_t t = started; t < threads; ++t) work(t);
  for (auto& thread : pool) thread.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace attnconv
