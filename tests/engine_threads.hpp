#pragma once
// Sets the engine thread count for a scope and restores it however the scope
// is left (a failed REQUIRE throws).
#include "parallel/threads.hpp"

namespace attnconv::testing {

struct EngineThreads {
  const int saved = engine_threads();
  explicit EngineThreads(int threads) { set_engine_threads(threads); }
  ~EngineThreads() { set_engine_threads(saved); }
  EngineThreads(const EngineThreads&) = delete;
  EngineThreads& operator=(const EngineThreads&) = delete;
};

// f() with the engine thread count set to `threads` for the call.
template <class F> auto on_engine_threads(int threads, F&& f) {
  const EngineThreads scope(threads);
  return f();
}

}  // namespace attnconv::testing
