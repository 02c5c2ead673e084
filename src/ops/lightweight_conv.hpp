#pragma once
// The lightweight convolution of Wu, Fan, Baevski, Dauphin & Auli (ICLR 2019,
// Eq. 3): a depthwise 1D convolution whose kernel is softmax-normalised over
// its 2k + 1 taps and shared by the channels of a head, with zero padding k on
// both sides. As PyTorch's conv1d, a cross-correlation (docs/design.md,
// "Relative position as lightweight convolution"):
//   y[c, i] = sum_{t=0}^{2k} softmax(w_h)_t x[c, i + t - k],   h = c / (C / N_h),
// x[c, j] = 0 outside 0 <= j < L.
#include "tensor/tensor.hpp"

namespace attnconv {

// softmax(w_h) of each row of `logits` (N_h, 2k + 1), the row maximum subtracted.
template <class T> Matrix<T> softmax_rows(const Matrix<T>& logits);

// x (C, L), logits (N_h, 2k + 1) with N_h dividing C. Throws std::invalid_argument otherwise.
template <class T> Sequence<T> lightweight_conv1d(const Sequence<T>& x, const Matrix<T>& logits);

}  // namespace attnconv
