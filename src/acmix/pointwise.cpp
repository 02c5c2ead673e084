#include "acmix/pointwise.hpp"

#include <stdexcept>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

namespace attnconv {

template <class T>
Image<T> pointwise_conv(const Image<T>& x, const Matrix<T>& weight, const std::optional<Vector<T>>& bias,
                        OpCounter& counter, const std::string& label) {
  const std::size_t c_in = x.shape(0), height = x.shape(1), width = x.shape(2), c_out = weight.shape(0);
  if (weight.shape(1) != c_in) throw std::invalid_argument("pointwise_conv: channel mismatch");
  const Matrix<T> flat = xt::reshape_view(x, {c_in, height * width});
  Matrix<T> product = xt::linalg::dot(weight, flat);
  counter.add(label, std::int64_t(c_out * c_in * height * width));
  if (bias)
    for (std::size_t o = 0; o < c_out; ++o) xt::view(product, o, xt::all()) += (*bias)(o);
  Image<T> out = xt::reshape_view(product, {c_out, height, width});
  return out;
}

template Image<float> pointwise_conv(const Image<float>&, const Matrix<float>&, const std::optional<Vector<float>>&,
                                     OpCounter&, const std::string&);
template Image<double> pointwise_conv(const Image<double>&, const Matrix<double>&,
                                      const std::optional<Vector<double>>&, OpCounter&, const std::string&);

}  // namespace attnconv
