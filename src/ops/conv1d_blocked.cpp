#include "ops/conv1d_blocked.hpp"

#include <stdexcept>

namespace attnconv {

ConvGeometry as_2d(const Conv1dGeometry& g) {
  ConvGeometry out;
  out.padding = {0, 0, g.pad_left, g.pad_right};
  out.padding_mode = g.padding_mode;
  out.stride = {1, g.stride};
  out.dilation = {1, g.dilation};
  out.groups = g.groups;
  return out;
}

template <class T> Image<T> as_image(const Sequence<T>& x) {
  Image<T> out({x.shape(0), 1, x.shape(1)});
  std::copy(x.cbegin(), x.cend(), out.begin());
  return out;
}

template <class T> Kernel<T> as_kernel(const Kernel1d<T>& w) {
  Kernel<T> out({w.shape(0), w.shape(1), 1, w.shape(2)});
  std::copy(w.cbegin(), w.cend(), out.begin());
  return out;
}

template <class T> Sequence<T> as_sequence(const Image<T>& x) {
  if (x.shape(1) != 1) throw std::invalid_argument("as_sequence: the image must have height 1");
  Sequence<T> out({x.shape(0), x.shape(2)});
  std::copy(x.cbegin(), x.cend(), out.begin());
  return out;
}

template <class T>
Sequence<T> conv1d_blocked(const Sequence<T>& x, const Kernel1d<T>& weight, const std::optional<Vector<T>>& bias,
                           const Conv1dGeometry& geometry) {
  return as_sequence(conv2d_blocked(as_image(x), as_kernel(weight), bias, as_2d(geometry)));
}

template Image<float> as_image(const Sequence<float>&);
template Kernel<float> as_kernel(const Kernel1d<float>&);
template Sequence<float> as_sequence(const Image<float>&);
template Sequence<float> conv1d_blocked(const Sequence<float>&, const Kernel1d<float>&, const std::optional<Vector<float>>&,
                                        const Conv1dGeometry&);
template Image<double> as_image(const Sequence<double>&);
template Kernel<double> as_kernel(const Kernel1d<double>&);
template Sequence<double> as_sequence(const Image<double>&);
template Sequence<double> conv1d_blocked(const Sequence<double>&, const Kernel1d<double>&, const std::optional<Vector<double>>&,
                                        const Conv1dGeometry&);

}  // namespace attnconv
