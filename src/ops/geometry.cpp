#include "ops/geometry.hpp"

#include <stdexcept>
#include <string>

namespace attnconv {

int group_in_channels(std::size_t c_in, std::size_t weight_out, std::size_t weight_in, int groups, const char* who) {
  if (groups < 1 || weight_out % std::size_t(groups) != 0 || weight_in * std::size_t(groups) != c_in)
    throw std::invalid_argument(std::string(who) + ": " + std::to_string(c_in) + " input channels, a weight (" +
                                std::to_string(weight_out) + ", " + std::to_string(weight_in) + ", ...) and groups " +
                                std::to_string(groups) + " do not agree: the weight must be (C_out, C_in / groups, ...)"
                                " with groups dividing C_in and C_out");
  return int(weight_in);
}

int conv_output_size(int input, int pad_before, int pad_after, int kernel, int stride, int dilation) {
  const int span = input + pad_before + pad_after - dilation * (kernel - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

}  // namespace attnconv
