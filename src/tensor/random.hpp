#pragma once
// A seeded generator that gives the same numbers on every platform: SplitMix64
// (Steele, Lea & Flood 2014) and uniform draws built from its bits with exact
// arithmetic only. std::*_distribution is avoided on purpose: its output is
// implementation-defined and differs between standard libraries.
#include <cstdint>

#include "tensor/tensor.hpp"

namespace attnconv {

class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next_u64();
  // Uniform in [-1, 1): a 53-bit integer scaled by a power of two, exact.
  double uniform();
  // An independent stream for a named purpose ("input", "weight", ...), so that
  // adding a draw for one tensor never shifts the numbers of another.
  Random stream(std::uint64_t purpose) const;

  template <class T, std::size_t N> xt::xtensor<T, N> uniform_tensor(const std::array<std::size_t, N>& shape);

 private:
  std::uint64_t state_;
};

template <class T, std::size_t N>
xt::xtensor<T, N> Random::uniform_tensor(const std::array<std::size_t, N>& shape) {
  xt::xtensor<T, N> out(shape);
  for (auto& value : out) value = static_cast<T>(uniform());
  return out;
}

// Stable 64-bit hash of a purpose name (FNV-1a), for Random::stream.
std::uint64_t purpose_id(const char* name);

}  // namespace attnconv
