// Pan et al., "On the Integration of Self-Attention and Convolution", CVPR 2022,
// Sec. 3.1, Eq. (2)-(4): a k1 x k2 convolution equals k1*k2 1x1 convolutions
// (Stage I, one matrix product each) followed by shifts with zero fill and a
// sum (Stage II). Padding modes other than zeros: pad first, then decompose.
// The decomposition runs fused (Stage I only where Stage II reads it, added in
// place); the convolution it is compared with is the im2col product, one GEMM
// over (c, p, q) jointly, not tap by tap (both checked against the plain loop
// reference::conv2d in tests/unit/test_fast_paths.cpp).
#include "acmix/conv_decomposition.hpp"
#include "ops/conv2d_gemm.hpp"
#include "metrics/compare.hpp"
#include "proof/conv_case.hpp"
#include "proof/proof_spec.hpp"
#include "proof/vacuous.hpp"

namespace attnconv {
namespace metric {
namespace {
const Metric one_by_one_convolutions{
    .name = "one_by_one_convolutions", .type = MetricType::integer, .help = "k1 k2: the Stage I 1x1 convolutions"};
const Metric stage1_multiply_adds{
    .name = "stage1_multiply_adds", .type = MetricType::integer, .help = "multiply-adds counted in Stage I"};
const Metric stage2_additions{
    .name = "stage2_additions", .type = MetricType::integer, .help = "additions counted in Stage II (shift and sum)"};
}  // namespace
}  // namespace metric

namespace {

template <class T> Outcome verify(const Case& c, const ConvCaseParams& p) {
  const ConvCase<T> conv = conv_case_tensors<T>(c, p);
  const Image<T> expected = conv2d_gemm(conv.input, conv.weight, conv.bias, conv.geometry, ConvGemmForm::im2col);
  OpCounter counter;
  const Image<T> actual =
      conv2d_decomposed(conv.input, conv.weight, conv.bias, conv.geometry, ShiftMethod::fused, counter);
  const Difference d = compare(actual, expected);
  Outcome out;
  set_distance(out, d);
  out.set(metric::one_by_one_convolutions, conv.weight.shape(2) * conv.weight.shape(3));
  out.set(metric::stage1_multiply_adds, counter.total("stage1"));
  out.set(metric::stage2_additions, counter.total("stage2"));
  out.set(metric::padding_resolved, {conv.geometry.padding.top, conv.geometry.padding.bottom, conv.geometry.padding.left,
                   conv.geometry.padding.right});
  out.set(metric::output_shape, {expected.shape(0), expected.shape(1), expected.shape(2)});
  if (conv.geometry.padding_mode != PaddingMode::zeros)
    out.message = to_string(conv.geometry.padding_mode) + " padding: the input is padded first, then decomposed";
  vacuous_if_zero(out, "the input", conv.input, "the bias");
  vacuous_if_zero(out, "conv_weight", conv.weight, "the bias");
  out.tensors = conv_case_dump(conv);
  out.tensors.push_back({"expected", xt::xarray<T>(expected)});
  out.tensors.push_back({"actual", xt::xarray<T>(actual)});
  return out;
}

const bool registered = register_proof(make_proof(conv_case_proof({
    .id = "acmix2022.conv_decomposition",
    .paper = "Pan et al., On the Integration of Self-Attention and Convolution, CVPR 2022, Sec. 3.1, Eq. (2)-(4)",
    .statement =
        "A k x k convolution equals k^2 1x1 convolutions (Stage I) followed by shifts with zero fill and a sum "
        "(Stage II), for any kernel shape, padding, stride and dilation.",
    .verify = {verify<float>, verify<double>},
    .metrics = distance_metrics("the decomposition against the convolution (im2col)",
                                {metric::one_by_one_convolutions, metric::stage1_multiply_adds,
                                 metric::stage2_additions, metric::padding_resolved, metric::output_shape}),
    .dumps = conv_dumps("the convolution, (C_out, H_out, W_out)", "Stage I 1x1 convolutions, shifts and sum"),
})));

}  // namespace
}  // namespace attnconv
