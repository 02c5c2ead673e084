#include "parallel/threads.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
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
  std::exception_ptr error;
  std::mutex error_mutex;
  const auto work = [&](std::size_t t) {
    try {
      for (std::size_t i = t; i < count; i += threads) fn(i, t);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& thread : pool) thread.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace attnconv
