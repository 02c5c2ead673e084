// Pan et al., "On the Integration of Self-Attention and Convolution", CVPR 2022,
// Sec. 3.4 ("improved shift"): each shift of the convolution decomposition is a
// depthwise convolution with a one-hot kernel. It must equal the tensor shift
// (exactly: one product by 1, the rest by 0) and the decomposition with it must
// equal the convolution.
#include <algorithm>

#include "acmix/conv_decomposition.hpp"
#include "acmix/pointwise.hpp"
#include "acmix/shift.hpp"
#include "metrics/compare.hpp"
#include "proof/conv_case.hpp"
#include "proof/proof_spec.hpp"
#include "proof/vacuous.hpp"
#include "proof/verdict.hpp"

namespace attnconv {
namespace metric {
namespace {
const Metric shift_max_abs{.name = "shift_max_abs",
                           .help = "max over the k1 k2 shifts of |one-hot depthwise shift - tensor shift| (exact: 0)",
                           .error = true};
const Metric depthwise_vs_tensor_shift_max_abs{.name = "depthwise_vs_tensor_shift_max_abs",
                                               .help = "max |decomposition with depthwise shifts - with tensor shifts|",
                                               .error = true};
const Metric depthwise_shift_multiply_adds{.name = "depthwise_shift_multiply_adds",
                                           .type = MetricType::integer,
                                           .help = "multiply-adds of the depthwise shifts"};
}  // namespace
}  // namespace metric

namespace {

template <class T> Outcome verify(const Case& c, const ConvCaseParams& p) {
  const ConvCase<T> conv = conv_case_tensors<T>(c, p);
  const Image<T> expected = conv2d_blocked(conv.input, conv.weight, conv.bias, conv.geometry);
  OpCounter counter, tensor_counter;
  const Image<T> actual =
      conv2d_decomposed(conv.input, conv.weight, conv.bias, conv.geometry, ShiftMethod::depthwise, counter);
  const Image<T> tensor_shifted =
      conv2d_decomposed(conv.input, conv.weight, conv.bias, conv.geometry, ShiftMethod::tensor_shift, tensor_counter);

  // Every one of the k1*k2 shifts, depthwise against tensor shift, on the
  // Stage I maps of this case (the padded input for a non-zero padding mode).
  const bool pad_first = conv.geometry.padding_mode != PaddingMode::zeros;
  const Image<T> source = pad_first ? pad(conv.input, conv.geometry.padding, conv.geometry.padding_mode) : conv.input;
  ConvGeometry g = conv.geometry;
  if (pad_first) g.padding = Padding{}, g.padding_mode = PaddingMode::zeros;
  const std::array<int, 2> kernel{int(conv.weight.shape(2)), int(conv.weight.shape(3))};
  const std::array<int, 2> out_size{int(expected.shape(1)), int(expected.shape(2))};
  double shift_max_abs = 0;
  OpCounter scratch;
  const std::vector<Matrix<T>> slices = kernel_slices(conv.weight);  // W[:, :, p, q] at p K2 + q
  for (int p = 0; p < kernel[0]; ++p)
    for (int q = 0; q < kernel[1]; ++q) {
      const Matrix<T>& w_pq = slices[std::size_t(p * kernel[1] + q)];
      const Image<T> g_pq = pointwise_conv(source, w_pq, std::optional<Vector<T>>{}, scratch, "stage1", g.groups);
      const Image<T> by_tensor =
          shift_zero_fill(g_pq, {p * g.dilation[0] - g.padding.top, q * g.dilation[1] - g.padding.left}, g.stride,
                          out_size);
      shift_max_abs = std::max(shift_max_abs, compare(shift_depthwise(g_pq, kernel, p, q, g, scratch), by_tensor).max_abs);
    }

  const Difference d = compare(actual, expected);
  Outcome out;
  set_distance(out, d);
  out.set(metric::shift_max_abs, shift_max_abs);
  out.set(metric::depthwise_vs_tensor_shift_max_abs, compare(actual, tensor_shifted).max_abs);
  out.set(metric::depthwise_shift_multiply_adds, counter.total("stage2.depthwise_shift"));
  out.set(metric::output_shape, {expected.shape(0), expected.shape(1), expected.shape(2)});
  out.default_tolerance = dtype_tolerance(to_string(p.dtype));
  out.default_tolerance[metric::shift_max_abs.name] = 0.0;  // a one-hot product is exact
  out.message = "shift_max_abs compares the k1*k2 one-hot depthwise shifts with the tensor shifts";
  vacuous_if_zero(out, "the input", conv.input, "the bias");
  vacuous_if_zero(out, "conv_weight", conv.weight, "the bias");
  out.tensors = conv_case_dump(conv);
  out.tensors.push_back({"expected", xt::xarray<T>(expected)});
  out.tensors.push_back({"actual", xt::xarray<T>(actual)});
  return out;
}

const bool registered = register_proof(make_proof(conv_case_proof({
    .id = "acmix2022.shift_as_depthwise",
    .paper = "Pan et al., On the Integration of Self-Attention and Convolution, CVPR 2022, Sec. 3.4 (improved shift)",
    .statement =
        "A shift of the convolution decomposition is a depthwise convolution with a one-hot kernel: it equals the "
        "tensor shift, and the decomposition built on it equals the convolution.",
    .verify = {verify<float>, verify<double>},
    .metrics = distance_metrics("the decomposition with depthwise shifts against the plain-loop convolution",
                                {metric::shift_max_abs, metric::depthwise_vs_tensor_shift_max_abs,
                                 metric::depthwise_shift_multiply_adds, metric::output_shape}),
    .dumps = conv_dumps("the convolution, (C_out, H_out, W_out)", "the decomposition with one-hot depthwise shifts"),
})));

}  // namespace
}  // namespace attnconv
