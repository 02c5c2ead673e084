#pragma once
// A grouped convolution's weight as the dense weight of the same convolution
// (docs/design.md, "Groups"): W (C_out, C_in/groups, K1, K2) becomes
// W_dense (C_out, C_in, K1, K2) with
//   W_dense[o, g(o)*C_in/groups + c, p, q] = W[o, c, p, q],   0 elsewhere,
// g(o) = o / (C_out/groups). Each tap's slice W_dense[:, :, p, q] is then
// block-diagonal, `groups` blocks of (C_out/groups) x (C_in/groups); groups = 1
// returns W itself.
#include <cstddef>

#include "tensor/tensor.hpp"

namespace attnconv {

template <class T> Kernel<T> dense_kernel(const Kernel<T>& weight, int groups);

}  // namespace attnconv
