// parallel_for: every index runs once, and an error is the smallest index's,
// whatever the thread count and whichever thread throws first in time.
#include <atomic>
#include <chrono>
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
