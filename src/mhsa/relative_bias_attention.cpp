#include "mhsa/relative_bias_attention.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace attnconv {

template <class T>
RelativeBias<T> window_bias(const Matrix<T>& logits, std::size_t length, BiasOutsideWindow outside,
                            std::size_t padding_l) {
  const long first = -long(padding_l), last = long(logits.shape(1)) - 1 - long(padding_l), l = long(length);
  if (last < 0) throw std::invalid_argument("window_bias: padding_l must be below the number of taps");
  RelativeBias<T> beta = xt::zeros<T>({logits.shape(0), 2 * length - 1});
  for (std::size_t h = 0; h < logits.shape(0); ++h)
    for (long delta = -(l - 1); delta <= l - 1; ++delta) {
      const bool inside = first <= delta && delta <= last;
      const long tap = std::clamp(delta, first, last) - first;
      beta(h, std::size_t(delta + l - 1)) = inside || outside == BiasOutsideWindow::clipped
                                                ? logits(h, std::size_t(tap))
                                                : -std::numeric_limits<T>::infinity();
    }
  return beta;
}

template <class T> RelativeBias<T> window_bias(const Matrix<T>& logits, std::size_t length, BiasOutsideWindow outside) {
  return window_bias(logits, length, outside, logits.shape(1) / 2);
}

template <class T> Vector<T> relative_bias_row(const RelativeBias<T>& beta, std::size_t h, std::size_t i) {
  const std::size_t length = (beta.shape(1) + 1) / 2;
  Vector<T> row = xt::zeros<T>({length});
  for (std::size_t j = 0; j < length; ++j) row(j) = beta(h, j + length - 1 - i);
  const T top = *std::max_element(row.begin(), row.end());
  T total = 0;
  for (T& s : row) total += s = std::exp(s - top);  // exp(-inf) = 0: a masked key
  for (T& s : row) s /= total;
  return row;
}

template <class T>
Sequence<T> relative_bias_attention(const Sequence<T>& x, const RelativeBias<T>& beta, HeadLayout layout) {
  const std::size_t channels = x.shape(0), length = x.shape(1), heads = beta.shape(0);
  if (heads == 0 || channels % heads != 0)
    throw std::invalid_argument("relative_bias_attention: heads must divide channels");
  if (beta.shape(1) != 2 * length - 1) throw std::invalid_argument("relative_bias_attention: beta is not (N_h, 2L - 1)");
  Sequence<T> y = xt::zeros<T>({channels, length});
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < length; ++i) {
      const Vector<T> p = relative_bias_row(beta, h, i);
      for (std::size_t c = 0; c < channels; ++c)
        if (channel_head(c, channels, heads, layout) == h)
          for (std::size_t j = 0; j < length; ++j) y(c, i) += p(j) * x(c, j);
    }
  return y;
}
template <class T> Sequence<T> relative_bias_attention(const Sequence<T>& x, const RelativeBias<T>& beta) {
  return relative_bias_attention(x, beta, HeadLayout::contiguous);
}

template RelativeBias<float> window_bias(const Matrix<float>&, std::size_t, BiasOutsideWindow, std::size_t);
template RelativeBias<double> window_bias(const Matrix<double>&, std::size_t, BiasOutsideWindow, std::size_t);
template RelativeBias<float> window_bias(const Matrix<float>&, std::size_t, BiasOutsideWindow);
template RelativeBias<double> window_bias(const Matrix<double>&, std::size_t, BiasOutsideWindow);
template Vector<float> relative_bias_row(const RelativeBias<float>&, std::size_t, std::size_t);
template Vector<double> relative_bias_row(const RelativeBias<double>&, std::size_t, std::size_t);
template Sequence<float> relative_bias_attention(const Sequence<float>&, const RelativeBias<float>&, HeadLayout);
template Sequence<double> relative_bias_attention(const Sequence<double>&, const RelativeBias<double>&, HeadLayout);
template Sequence<float> relative_bias_attention(const Sequence<float>&, const RelativeBias<float>&);
template Sequence<double> relative_bias_attention(const Sequence<double>&, const RelativeBias<double>&);

}  // namespace attnconv
