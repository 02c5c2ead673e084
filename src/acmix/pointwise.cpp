#include "acmix/pointwise.hpp"

#include <stdexcept>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

#include "ops/geometry.hpp"

namespace attnconv {

template <class T>
Image<T> pointwise_conv(const Image<T>& x, const Matrix<T>& weight, const std::optional<Vector<T>>& bias,
                        OpCounter& counter, const std::string& label, int groups) {
  const std::size_t c_in = x.shape(0), height = x.shape(1), width = x.shape(2), c_out = weight.shape(0);
  const std::size_t group_in = std::size_t(group_in_channels(c_in, c_out, weight.shape(1), groups, "pointwise_conv"));
  const std::size_t group_out = c_out / std::size_t(groups);
  const Matrix<T> flat = xt::reshape_view(x, {c_in, height * width});
  Matrix<T> product;
  if (groups == 1) {
    product = xt::linalg::dot(weight, flat);
  } else {
    product = Matrix<T>({c_out, height * width});
    for (std::size_t g = 0; g < std::size_t(groups); ++g) {
      const std::size_t o = g * group_out, c = g * group_in;
      const Matrix<T> w_g = xt::view(weight, xt::range(o, o + group_out), xt::all());
      const Matrix<T> x_g = xt::view(flat, xt::range(c, c + group_in), xt::all());
      xt::view(product, xt::range(o, o + group_out), xt::all()) = xt::linalg::dot(w_g, x_g);
    }
  }
  counter.add(label, std::int64_t(c_out * group_in * height * width));
  if (bias)
    for (std::size_t o = 0; o < c_out; ++o) xt::view(product, o, xt::all()) += (*bias)(o);
  Image<T> out = xt::reshape_view(product, {c_out, height, width});
  return out;
}

template Image<float> pointwise_conv(const Image<float>&, const Matrix<float>&, const std::optional<Vector<float>>&,
                                     OpCounter&, const std::string&, int);
template Image<double> pointwise_conv(const Image<double>&, const Matrix<double>&,
                                      const std::optional<Vector<double>>&, OpCounter&, const std::string&, int);

}  // namespace attnconv
