#pragma once
// Stage I of ACmix (Pan et al., CVPR 2022, Sec. 3.1-3.3): a 1x1 convolution is
// one matrix product, out (C_out, H*W) = weight (C_out, C_in) . x (C_in, H*W) + bias;
// a grouped 1x1 convolution (ops/geometry.hpp) is one product per group,
// out[group g] = weight[group g] (C_out/groups, C_in/groups) . x[group g].
#include <optional>
#include <string>

#include "acmix/op_counter.hpp"
#include "tensor/tensor.hpp"

namespace attnconv {

// x (C_in, H, W), weight (C_out, C_in / groups), bias (C_out) or none -> (C_out, H, W).
// Adds C_out * (C_in / groups) * H * W multiply-adds to `counter` under `label`.
template <class T>
Image<T> pointwise_conv(const Image<T>& x, const Matrix<T>& weight, const std::optional<Vector<T>>& bias,
                        OpCounter& counter, const std::string& label, int groups = 1);

}  // namespace attnconv
