#pragma once
// Seeded ACmix parameters: every tensor uniform in [-1, 1) from its own stream
// (Random::stream(purpose_id("<state_dict key>"))), so a case's numbers do not
// depend on which other tensors are drawn.
#include <array>
#include <string>

#include "acmix/acmix_module.hpp"
#include "tensor/random.hpp"

namespace attnconv {

struct AcmixInit {
  std::string dep_init = "shift";   // "shift" (the reference's) | "random" (trained-like)
  bool projection_bias = true;      // conv1..3 biases; false: all zero
  bool dep_conv_bias = false;       // the reference drops it (init_rate_0 returns None)
  std::array<double, 2> rates{0.5, 0.5};
};

template <class T> AcmixWeights<T> random_acmix_weights(const AcmixConfig& config, const AcmixInit& init, const Random& random);

}  // namespace attnconv
