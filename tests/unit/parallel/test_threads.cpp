// parallel_for: every index runs once, and an error is the smallest index's,
// whatever the thread count and whichever thread throws first in time; a
// thread that cannot be started leaves its indices to the calling thread.
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "engine_threads.hpp"
#include "parallel/threads.hpp"

using namespace attnconv;
using attnconv::testing::EngineThreads;

TEST_CASE("parallel_for runs every index once, on any thread count", "[threads]") {
  const int threads = GENERATE(1, 2, 3, 8);
  const EngineThreads scope(threads);
  const std::size_t count = 1000;
  std::vector<std::atomic<int>> runs(count);
  std::atomic<std::size_t> threads_seen{0};  // the largest t + 1 (Catch2's CHECK is not for worker threads)
  parallel_for(count, [&](std::size_t i, std::size_t t) {
    runs[i].fetch_add(1);
    for (std::size_t seen = threads_seen; seen < t + 1 && !threads_seen.compare_exchange_weak(seen, t + 1);) {
    }
  });
  CHECK(threads_seen == parallel_threads(count));
  for (std::size_t i = 0; i < count; ++i) REQUIRE(runs[i].load() == 1);
}

TEST_CASE("parallel_for rethrows the smallest index that threw, not the first in time", "[threads]") {
  const int threads = GENERATE(1, 2, 3, 8);
  const EngineThreads scope(threads);
  const std::size_t count = 1000;
  std::vector<std::atomic<int>> runs(count);
  // Index 17 throws late; 20, 400 and 999 throw at once (if their thread
  // reaches them): on two or more threads a later index throws first in time.
  const auto fn = [&](std::size_t i, std::size_t) {
    runs[i].fetch_add(1);
    if (i == 17) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      throw std::runtime_error("index 17");
    }
    if (i == 20 || i == 400 || i == 999) throw std::runtime_error("index " + std::to_string(i));
  };
  CHECK_THROWS_WITH(parallel_for(count, fn), "index 17");
  // Every index before the one named ran, once.
  for (std::size_t i = 0; i <= 17; ++i) REQUIRE(runs[i].load() == 1);
  for (std::size_t i = 18; i < count; ++i) REQUIRE(runs[i].load() <= 1);
}

// Not under AddressSanitizer, whose own mappings an address-space limit breaks
// (clang 14 names it by __has_feature alone, GCC by __SANITIZE_ADDRESS__).
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTNCONV_TEST_ASAN
#endif
#endif
#if !defined(ATTNCONV_TEST_ASAN) && !defined(__SANITIZE_ADDRESS__)
TEST_CASE("parallel_for runs every index when threads cannot be started", "[threads]") {
  // In a child process whose address space is limited to what it has mapped
  // plus three thread stacks and 4 MiB, so that most of 32 threads' stacks
  // cannot be mapped and std::thread throws. Before, the threads already
  // started were left joinable and the process ended in std::terminate.
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const EngineThreads scope(32);
    const std::size_t count = 3200;
    std::vector<std::atomic<int>> runs(count);
    std::vector<std::thread::id> ran_on(count);  // allocated before the limit, as is all the child needs
    std::size_t pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    std::size_t stack_bytes = 0;  // a new thread's stack (glibc: from RLIMIT_STACK)
    pthread_attr_t defaults;
    if (pthread_getattr_default_np(&defaults) != 0 || pthread_attr_getstacksize(&defaults, &stack_bytes) != 0) _exit(3);
    const rlim_t limit = rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE)) + 3 * rlim_t(stack_bytes) + (rlim_t(4) << 20);
    const rlimit address_space{limit, limit};
    if (pages == 0 || setrlimit(RLIMIT_AS, &address_space) != 0) _exit(3);
    try {
      parallel_for(count, [&](std::size_t i, std::size_t) {
        runs[i].fetch_add(1);
        ran_on[i] = std::this_thread::get_id();
      });
    } catch (...) {
      _exit(4);
    }
    for (const auto& r : runs)
      if (r.load() != 1) _exit(5);
    const std::set<std::thread::id> threads_used(ran_on.begin(), ran_on.end());
    _exit(threads_used.size() < 32 ? 0 : 6);  // 6: every thread started, the case was not tested
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO("exit status " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << ", signal "
                      << (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}
#endif
