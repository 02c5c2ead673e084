#include "local_common.hpp"

#include <algorithm>
#include <cmath>
#include <xtensor/xview.hpp>

#include "io/errors.hpp"
#include "ops/padding.hpp"
#include "reference/conv.hpp"

namespace attnconv {

int square_odd_kernel(const ConvShape& shape) {
  const int kernel = shape.kernel[0];
  if (shape.kernel[1] != kernel || kernel % 2 == 0)
    throw ParamError("kernel", "the kernel must be K x K with K odd (a centred neighbourhood), got " +
                                   std::to_string(shape.kernel[0]) + " x " + std::to_string(shape.kernel[1]));
  return kernel;
}

template <class T>
LocalConvCase<T> local_conv_case(const CaseTensors& tensors, const ConvShape& shape, const Theorem1Shared& shared,
                                 int dilation) {
  const std::size_t c_out = shape.out_channels, k = std::size_t(shape.kernel[0]);
  LocalConvCase<T> out;
  out.x = tensors.get<T, 3>("input", shape.input());
  out.w = tensors.get<T, 4>("conv_weight", {c_out, shape.in_channels, k, k});
  out.b = tensors.conv_bias<T>(shared.bias, c_out);
  ConvGeometry geometry;
  geometry.dilation = {dilation, dilation};
  geometry.padding = same_padding(shape.kernel, geometry.dilation);
  out.expected = reference::conv2d(out.x, out.w, out.b, geometry);
  out.options.heads = int(k * k);
  out.options.head_dim = int(c_out);
  out.options.alpha = shared.alpha;
  out.layer = theorem1_layer(out.w, out.b, out.options);
  return out;
}

TensorShapes local_conv_tensor_shapes(const ConvShape& shape, bool bias) {
  const auto input = shape.input();
  const auto weight = shape.weight();
  TensorShapes shapes = {{"input", {input.begin(), input.end()}}, {"conv_weight", {weight.begin(), weight.end()}}};
  if (bias) shapes["conv_bias"] = {shape.out_channels};
  return shapes;
}

template <class T>
ContentMaps<T> content_maps(const Image<T>& x, const xt::xtensor<T, 3>& w_qry, const xt::xtensor<T, 3>& w_key) {
  const std::size_t heads = w_qry.shape(0), c_in = x.shape(0), d_k = w_qry.shape(2);
  ContentMaps<T> out{HeadMaps<T>({heads, x.shape(1), x.shape(2), d_k}), HeadMaps<T>({heads, x.shape(1), x.shape(2), d_k})};
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < x.shape(1); ++i)
      for (std::size_t j = 0; j < x.shape(2); ++j)
        for (std::size_t d = 0; d < d_k; ++d) {
          T qs = 0, ks = 0;
          for (std::size_t c = 0; c < c_in; ++c) qs += x(c, i, j) * w_qry(h, c, d), ks += x(c, i, j) * w_key(h, c, d);
          out.q(h, i, j, d) = qs, out.k(h, i, j, d) = ks;
        }
  return out;
}

template <class T> HeadMaps<T> head_values(const MhsaLayer<T>& layer, const Image<T>& x) {
  const std::size_t heads = layer.heads.size(), d_h = layer.head_dim(), c_in = x.shape(0);
  HeadMaps<T> out = xt::zeros<T>({heads, x.shape(1), x.shape(2), d_h});
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < x.shape(1); ++i)
      for (std::size_t j = 0; j < x.shape(2); ++j)
        for (std::size_t d = 0; d < d_h; ++d) {
          T sum = 0;
          for (std::size_t c = 0; c < c_in; ++c) sum += x(c, i, j) * layer.heads[h].w_val(c, d);
          out(h, i, j, d) = sum;
        }
  return out;
}

template <class T> Image<T> project_heads(const MhsaLayer<T>& layer, const HeadMaps<T>& heads) {
  const std::size_t n_h = heads.shape(0), height = heads.shape(1), width = heads.shape(2), d_h = heads.shape(3);
  const std::size_t d_out = layer.out_dim();
  Image<T> out({d_out, height, width});
  for (std::size_t o = 0; o < d_out; ++o)
    for (std::size_t i = 0; i < height; ++i)
      for (std::size_t j = 0; j < width; ++j) {
        T sum = layer.b_out(o);
        for (std::size_t h = 0; h < n_h; ++h)
          for (std::size_t d = 0; d < d_h; ++d) sum += heads(h, i, j, d) * layer.w_out(h * d_h + d, o);
        out(o, i, j) = sum;
      }
  return out;
}

double quadratic_bias(std::array<int, 2> delta, std::array<int, 2> target, double alpha) {
  const double a = delta[0] - target[0], b = delta[1] - target[1];
  return -alpha * (a * a + b * b);
}



double softmax_roundoff(double score_terms, double sum_terms, double unit_roundoff, double score_scale,
                        double value_scale, double abs_scale) {
  return 2 * unit_roundoff * (2 * score_terms * score_scale * value_scale + sum_terms * abs_scale);
}

template LocalConvCase<float> local_conv_case(const CaseTensors&, const ConvShape&, const Theorem1Shared&, int);
template LocalConvCase<double> local_conv_case(const CaseTensors&, const ConvShape&, const Theorem1Shared&, int);
template ContentMaps<float> content_maps(const Image<float>&, const xt::xtensor<float, 3>&, const xt::xtensor<float, 3>&);
template ContentMaps<double> content_maps(const Image<double>&, const xt::xtensor<double, 3>&,
                                          const xt::xtensor<double, 3>&);
template HeadMaps<float> head_values(const MhsaLayer<float>&, const Image<float>&);
template HeadMaps<double> head_values(const MhsaLayer<double>&, const Image<double>&);
template Image<float> project_heads(const MhsaLayer<float>&, const HeadMaps<float>&);
template Image<double> project_heads(const MhsaLayer<double>&, const HeadMaps<double>&);

}  // namespace attnconv
