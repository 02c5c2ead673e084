#pragma once
// Per-head feature maps of the local attention variants: (heads, H, W, D), the
// layout of NATTEN and of Swin's windows (channels last), one map per head.
#include <xtensor/xtensor.hpp>

namespace attnconv {

template <class T> using HeadMaps = xt::xtensor<T, 4>;  // (heads, H, W, D)

}  // namespace attnconv
