#include "construction/theorem1_check.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/dense_kernel.hpp"

#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

namespace attnconv {

template <class T> Image<T> mhsa_image(const MhsaLayer<T>& layer, const Image<T>& x, const MhsaEngine<T>& engine) {
  const std::size_t height = x.shape(1), width = x.shape(2);
  return tokens_to_image(engine(layer, image_to_tokens(x), height, width), height, width);
}

double precision_lambda_min(const Theorem1Options& options, int kernel_positions) {
  if (options.encoding != Encoding::quadratic_general) return 1.0;
  double lambda = std::numeric_limits<double>::infinity();
  const int n = std::min(options.heads, kernel_positions);
  for (int h = 0; h < n; ++h) lambda = std::min(lambda, options.precision.at(std::size_t(h)).smallest_eigenvalue());
  return lambda;
}

template <class T>
FiniteAlphaBound construction_bound(const MhsaLayer<T>& layer, const Matrix<T>& tokens, std::size_t height,
                                   std::size_t width, std::array<int, 2> kernel, const Theorem1Options& options) {
  std::vector<std::optional<std::array<int, 2>>> targets(layer.heads.size());
  for (int h = 0; h < std::min(options.heads, kernel[0] * kernel[1]); ++h)
    targets[std::size_t(h)] = target_shift(h / kernel[1], h % kernel[1], kernel, options.dilation);
  const std::size_t conv_terms = layer.in_dim() * std::size_t(kernel[0] * kernel[1]);
  return finite_alpha_bound(layer, tokens, height, width, conv_terms, targets, options.alpha,
                            precision_lambda_min(options, kernel[0] * kernel[1]));
}

QueryGrid convolution_queries(std::array<int, 2> kernel, const ConvGeometry& g, std::array<int, 2> output_size) {
  const auto c = kernel_center(kernel);
  QueryGrid grid;
  for (int axis = 0; axis < 2; ++axis) {
    grid.first[std::size_t(axis)] = std::size_t(c[std::size_t(axis)] * g.dilation[std::size_t(axis)]);
    grid.step[std::size_t(axis)] = std::size_t(g.stride[std::size_t(axis)]);
    grid.count[std::size_t(axis)] = std::size_t(output_size[std::size_t(axis)]);
  }
  return grid;
}

template <class T>
Theorem1Check<T> check_theorem1(const Image<T>& x, const Kernel<T>& w_conv, const std::optional<Vector<T>>& bias,
                                const ConvGeometry& g, const Theorem1Options& options,
                                const MhsaGridEngine<T>& engine) {
  const std::array<int, 2> kernel{int(w_conv.shape(2)), int(w_conv.shape(3))};
  Theorem1Check<T> out;
  // The convolution, its dense kernel (a grouped kernel's block-diagonal slices,
  // docs/design.md "Groups") and the construction's layer of it.
  out.expected = conv2d_gemm(x, w_conv, bias, g);
  const bool inexact =
      !expresses_kernel(options, kernel[0] * kernel[1], int(w_conv.shape(1)) * g.groups, int(w_conv.shape(0)));
  const auto set_dense = [&](const Kernel<T>& dense) {  // groups == 1: the weight itself, not a copy
    out.slices = kernel_slices_t(dense);
    if (inexact) out.weight_norm = std::sqrt(double(xt::sum(xt::square(xt::cast<double>(dense)))()));
  };
  if (g.groups == 1) set_dense(w_conv);
  else set_dense(dense_kernel(w_conv, g.groups));
  out.layer = theorem1_layer(out.slices, kernel, bias, options);
  const Image<T> xpad = pad(x, g.padding, g.padding_mode);
  const Matrix<T> tokens = image_to_tokens(xpad);
  const QueryGrid queries = convolution_queries(kernel, g, {int(out.expected.shape(1)), int(out.expected.shape(2))});
  out.actual = tokens_to_image(engine(out.layer, tokens, xpad.shape(1), xpad.shape(2), queries), queries.count[0],
                               queries.count[1]);
  out.bound = construction_bound(out.layer, tokens, xpad.shape(1), xpad.shape(2), kernel, options);
  return out;
}

template <class T>
Theorem1Check<T> check_theorem1(const Image<T>& x, const Kernel<T>& w_conv, const std::optional<Vector<T>>& bias,
                                const ConvGeometry& g, const Theorem1Options& options, const MhsaEngine<T>& engine) {
  // The engine's whole padded image, read at the queries the convolution keeps.
  const MhsaGridEngine<T> at_queries = [&engine](const MhsaLayer<T>& layer, const Matrix<T>& tokens,
                                                 std::size_t height, std::size_t width, const QueryGrid& queries) {
    const Matrix<T> all = engine(layer, tokens, height, width);
    Matrix<T> kept({queries.size(), all.shape(1)});
    for (std::size_t i = 0; i < queries.count[0]; ++i)
      for (std::size_t j = 0; j < queries.count[1]; ++j)
        xt::row(kept, i * queries.count[1] + j) = xt::row(all, queries.at(0, i) * width + queries.at(1, j));
    return kept;
  };
  return check_theorem1(x, w_conv, bias, g, options, at_queries);
}

template Image<float> mhsa_image(const MhsaLayer<float>&, const Image<float>&, const MhsaEngine<float>&);
template Image<double> mhsa_image(const MhsaLayer<double>&, const Image<double>&, const MhsaEngine<double>&);
template FiniteAlphaBound construction_bound(const MhsaLayer<float>&, const Matrix<float>&, std::size_t, std::size_t,
                                             std::array<int, 2>, const Theorem1Options&);
template FiniteAlphaBound construction_bound(const MhsaLayer<double>&, const Matrix<double>&, std::size_t,
                                             std::size_t, std::array<int, 2>, const Theorem1Options&);
template Theorem1Check<float> check_theorem1(const Image<float>&, const Kernel<float>&,
                                             const std::optional<Vector<float>>&, const ConvGeometry&,
                                             const Theorem1Options&, const MhsaEngine<float>&);
template Theorem1Check<double> check_theorem1(const Image<double>&, const Kernel<double>&,
                                              const std::optional<Vector<double>>&, const ConvGeometry&,
                                              const Theorem1Options&, const MhsaEngine<double>&);
template Theorem1Check<float> check_theorem1(const Image<float>&, const Kernel<float>&,
                                             const std::optional<Vector<float>>&, const ConvGeometry&,
                                             const Theorem1Options&, const MhsaGridEngine<float>&);
template Theorem1Check<double> check_theorem1(const Image<double>&, const Kernel<double>&,
                                              const std::optional<Vector<double>>&, const ConvGeometry&,
                                              const Theorem1Options&, const MhsaGridEngine<double>&);

}  // namespace attnconv
