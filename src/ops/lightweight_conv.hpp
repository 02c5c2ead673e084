#pragma once
// The lightweight convolution of Wu, Fan, Baevski, Dauphin & Auli (ICLR 2019,
// Eq. 3): a depthwise 1D convolution whose kernel is softmax-normalised over
// its K = 2k + 1 taps and shared by the channels of a head, with zero padding
// padding_l on the left (k: "same", both sides; K - 1: causal, as fairseq's
// decoders). As PyTorch's conv1d, a cross-correlation (docs/design.md,
// "Relative position as lightweight convolution"):
//   y[c, i] = sum_{t=0}^{K-1} softmax(w_h)_t x[c, i + t - padding_l],   h = channel_head(c),
// x[c, j] = 0 outside 0 <= j < L; the head layout of fairseq's
// LightweightConv1dTBC (contiguous) or LightweightConv1d (interleaved).
#include "tensor/channel_heads.hpp"
#include "tensor/tensor.hpp"

namespace attnconv {

// softmax(w_h) of each row of `logits` (N_h, 2k + 1), the row maximum subtracted.
template <class T> Matrix<T> softmax_rows(const Matrix<T>& logits);

// x (C, L), logits (N_h, 2k + 1) with N_h dividing C, padding_l <= 2k. Throws std::invalid_argument otherwise.
template <class T>
Sequence<T> lightweight_conv1d(const Sequence<T>& x, const Matrix<T>& logits, HeadLayout layout, std::size_t padding_l);
// Contiguous heads, padding_l = k.
template <class T> Sequence<T> lightweight_conv1d(const Sequence<T>& x, const Matrix<T>& logits);

}  // namespace attnconv
