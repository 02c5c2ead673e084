#include "tensor/random.hpp"

namespace attnconv {

std::uint64_t Random::next_u64() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Random::uniform() {
  const double unit = static_cast<double>(next_u64() >> 11) * 0x1.0p-53;  // [0, 1), exact
  return 2.0 * unit - 1.0;                                                 // exact as well
}

Random Random::stream(std::uint64_t purpose) const {
  Random mixer(state_ ^ (purpose * 0xD1B54A32D192ED03ull));
  return Random(mixer.next_u64());
}

std::uint64_t purpose_id(const char* name) {
  std::uint64_t hash = 0xCBF29CE484222325ull;
  for (const char* c = name; *c != '\0'; ++c) hash = (hash ^ static_cast<unsigned char>(*c)) * 0x100000001B3ull;
  return hash;
}

}  // namespace attnconv
