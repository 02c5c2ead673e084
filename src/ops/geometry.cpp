#include "ops/geometry.hpp"

namespace attnconv {

int conv_output_size(int input, int pad_before, int pad_after, int kernel, int stride, int dilation) {
  const int span = input + pad_before + pad_after - dilation * (kernel - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

}  // namespace attnconv
