#pragma once
// The textbook convolutions, the ground truth every fast convolution is checked
// against (docs/design.md, "Convolution"; PyTorch's nn.Conv2d / nn.Conv1d,
// which compute a cross-correlation). Plain nested loops that read beside the
// formula: no blocking, no threads, no SIMD.
#include <optional>

#include "ops/geometry.hpp"

namespace attnconv::reference {

// y[o,i,j] = b[o] + sum_{c,p,q} W[o,c,p,q] * xpad[g(o)*C_in/groups + c, i*s1 + p*d1, j*s2 + q*d2]
// with xpad the padded image and g(o) = o / (C_out/groups) the group of output
// channel o (groups = geometry.groups). Weight (C_out, C_in/groups, K1, K2).
// The sum runs b, then c, p, q.
template <class T>
Image<T> conv2d(const Image<T>& x, const Kernel<T>& weight, const std::optional<Vector<T>>& bias,
                const ConvGeometry& geometry);

// y[o,i] = b[o] + sum_{c,p} W[o,c,p] * xpad[g(o)*C_in/groups + c, i*s + p*d],
// weight (C_out, C_in/groups, K), groups = geometry.groups.
template <class T>
Sequence<T> conv1d(const Sequence<T>& x, const Kernel1d<T>& weight, const std::optional<Vector<T>>& bias,
                   const Conv1dGeometry& geometry);

}  // namespace attnconv::reference
