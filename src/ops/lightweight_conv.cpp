#include "ops/lightweight_conv.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace attnconv {

template <class T> Matrix<T> softmax_rows(const Matrix<T>& logits) {
  Matrix<T> out(logits.shape());
  for (std::size_t h = 0; h < logits.shape(0); ++h) {
    T top = logits(h, 0);
    for (std::size_t t = 1; t < logits.shape(1); ++t) top = std::max(top, logits(h, t));
    T total = 0;
    for (std::size_t t = 0; t < logits.shape(1); ++t) total += out(h, t) = std::exp(logits(h, t) - top);
    for (std::size_t t = 0; t < logits.shape(1); ++t) out(h, t) /= total;
  }
  return out;
}

template <class T>
Sequence<T> lightweight_conv1d(const Sequence<T>& x, const Matrix<T>& logits, HeadLayout layout, std::size_t padding_l) {
  const std::size_t channels = x.shape(0), length = x.shape(1), heads = logits.shape(0), taps = logits.shape(1);
  if (heads == 0 || channels % heads != 0) throw std::invalid_argument("lightweight_conv1d: heads must divide channels");
  if (taps % 2 == 0) throw std::invalid_argument("lightweight_conv1d: the kernel has 2k + 1 taps");
  if (padding_l >= taps) throw std::invalid_argument("lightweight_conv1d: padding_l must be at most 2k");
  const Matrix<T> kernel = softmax_rows(logits);
  const long left = long(padding_l);
  Sequence<T> y = xt::zeros<T>({channels, length});
  for (std::size_t c = 0; c < channels; ++c) {
    const std::size_t h = channel_head(c, channels, heads, layout);
    for (long i = 0; i < long(length); ++i)
      for (long t = 0; t < long(taps); ++t) {
        const long j = i + t - left;
        if (j >= 0 && j < long(length)) y(c, std::size_t(i)) += kernel(h, std::size_t(t)) * x(c, std::size_t(j));
      }
  }
  return y;
}

template <class T> Sequence<T> lightweight_conv1d(const Sequence<T>& x, const Matrix<T>& logits) {
  return lightweight_conv1d(x, logits, HeadLayout::contiguous, logits.shape(1) / 2);
}

template Matrix<float> softmax_rows(const Matrix<float>&);
template Matrix<double> softmax_rows(const Matrix<double>&);
template Sequence<float> lightweight_conv1d(const Sequence<float>&, const Matrix<float>&, HeadLayout, std::size_t);
template Sequence<double> lightweight_conv1d(const Sequence<double>&, const Matrix<double>&, HeadLayout, std::size_t);
template Sequence<float> lightweight_conv1d(const Sequence<float>&, const Matrix<float>&);
template Sequence<double> lightweight_conv1d(const Sequence<double>&, const Matrix<double>&);

}  // namespace attnconv
