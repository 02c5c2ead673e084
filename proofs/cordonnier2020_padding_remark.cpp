// Cordonnier, Loukas & Jaggi, ICLR 2020, the remark on padding after Theorem 1:
// MHSA on the unpadded image keeps the image size, like a "SAME" convolution,
// but near the border a head's target pixel q + Delta does not exist, so it
// attends to the nearest pixels instead of reading the zero padding. The
// outputs agree in the interior and differ in a border band whose width on
// each side is the reach of the kernel there (c*d before, (K-1-c)*d after,
// c = (K-1)//2; floor(K/2) for dilation 1); padding the image first (the
// paper's fix, as in Theorem 1's proof) removes the band.
#include <algorithm>

#include "mhsa/dense_engine.hpp"
#include "mhsa/engine.hpp"
#include "metrics/compare.hpp"
#include "proof/case_tensors.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"
#include "proof/vacuous.hpp"
#include "border_band.hpp"
#include "theorem1_common.hpp"

namespace attnconv {
namespace metric {
namespace {
const Metric band_width{
    .name = "band_width", .type = MetricType::integer, .help = "the widest side of the measured border band"};
const Metric band_width_expected{
    .name = "band_width_expected", .type = MetricType::integer, .help = "the widest side of band_sides_expected"};
const Metric padded_max_abs{
    .name = "padded_max_abs", .help = "max_abs after the paper's fix (pad, attend, crop): round-off", .error = true};
const Metric padded_rel_l2{.name = "padded_rel_l2", .help = "rel_l2 after the paper's fix", .error = true};
const Metric padded_bound{.name = "padded_bound", .help = "the finite-alpha bound of the padded construction"};
}  // namespace
}  // namespace metric

namespace {

struct PaddingRemarkParams {
  ConvShape shape;
  ConvGeometry geometry;  // "same" zero padding, stride 1, the case's dilation and groups
  Theorem1Shared shared;
  Dtype dtype = Dtype::float64;
};

// Band widths [top, bottom, left, right] that the construction predicts.
std::array<int, 4> expected_band(std::array<int, 2> kernel, std::array<int, 2> dilation) {
  const auto c = kernel_center(kernel);
  return {c[0] * dilation[0], (kernel[0] - 1 - c[0]) * dilation[0], c[1] * dilation[1],
          (kernel[1] - 1 - c[1]) * dilation[1]};
}

void check(PaddingRemarkParams& p, const Case&, const Request&) {
  p.geometry.padding = same_padding(p.shape.kernel, p.geometry.dilation);
  p.geometry.groups = p.shape.groups;
  const auto &image = p.shape.image, &kernel = p.shape.kernel, &dilation = p.geometry.dilation;
  const ConvGeometry& g = p.geometry;
  const auto band = expected_band(kernel, dilation);
  if (g.padding.top != band[0] || g.padding.left != band[2])
    throw ParamError("dilation", "for this even kernel and dilation PyTorch's \"same\" puts " +
                                     std::to_string(g.padding.top) + " rows / " + std::to_string(g.padding.left) +
                                     " columns of padding before, while the construction centres the kernel at " +
                                     std::to_string(band[0]) + " / " + std::to_string(band[2]) +
                                     ": the unpadded MHSA is then a shifted \"same\" convolution, not one that differs "
                                     "in a border band only");
  for (int axis = 0; axis < 2; ++axis)
    if (image[axis] < dilation[axis] * (kernel[axis] - 1) + 1)
      throw ParamError("image", "the image must be at least the receptive field " +
                                    std::to_string(dilation[axis] * (kernel[axis] - 1) + 1) +
                                    " along axis " + std::to_string(axis) + " to have an interior");
}

// Bytes at the peak: Theorem 1's check (theorem1_common.hpp, dense engine, K1 K2 heads of dim D_out) on
// the zero-padded image, its layer kept while it runs again on the unpadded image: twice it.
double memory_estimate(const Case&, const PaddingRemarkParams& p) {
  Theorem1Options options;
  options.heads = p.shape.kernel[0] * p.shape.kernel[1];
  options.head_dim = int(p.shape.out_channels);
  return 2 * theorem1_memory(p.shape, p.geometry, options, p.dtype, Engine::dense) - process_bytes;
}

template <class T> Outcome verify(const Case& c, const PaddingRemarkParams& p) {
  const auto &image = p.shape.image, &kernel = p.shape.kernel;
  const std::size_t c_in = p.shape.in_channels, c_out = p.shape.out_channels;
  const std::size_t height = std::size_t(image[0]), width = std::size_t(image[1]);
  const ConvGeometry& g = p.geometry;

  const CaseTensors tensors(c, p.shared.seed);
  const Image<T> x = tensors.get<T, 3>("input", {c_in, height, width});
  const Kernel<T> w = tensors.get<T, 4>("conv_weight", p.shape.weight());
  const std::optional<Vector<T>> b = tensors.conv_bias<T>(p.shared.bias, c_out);

  Theorem1Options options;
  options.heads = kernel[0] * kernel[1];
  options.head_dim = int(c_out);
  options.alpha = p.shared.alpha;
  options.dilation = g.dilation;

  // The one place this proof chooses its MHSA engine.
  const MhsaEngine<T> engine = [](const MhsaLayer<T>& layer, const Matrix<T>& tokens, std::size_t h, std::size_t w_) {
    return mhsa_dense(layer, tokens, h, w_);
  };
  // The paper's fix: zero-pad ("same"), attend, crop. Its `expected` is the
  // zero-padded "same" convolution both comparisons are made against.
  const Theorem1Check<T> fixed = check_theorem1(x, w, b, g, options, engine);
  const Image<T>& expected = fixed.expected;
  // The remark's subject: attend over the unpadded image.
  const Image<T> unpadded = mhsa_image(fixed.layer, x, engine);
  const FiniteAlphaBound threshold_bound = construction_bound(fixed.layer, image_to_tokens(x), height, width, kernel, options);
  const double threshold = threshold_bound(options.alpha);

  // Where they differ, per pixel, and the measured band: the bounding box of
  // the pixels that agree (difference within the bound); the band is
  // everything outside it, pixels inside that differ or outside that agree
  // are exceptions.
  const xt::xtensor<double, 2> diff = pixel_difference(unpadded, expected);
  const auto band = expected_band(kernel, g.dilation);
  double interior_max_abs = 0;
  for (std::size_t i = std::size_t(band[0]); i + std::size_t(band[1]) < height; ++i)
    for (std::size_t j = std::size_t(band[2]); j + std::size_t(band[3]) < width; ++j)
      interior_max_abs = std::isnan(diff(i, j)) ? diff(i, j) : std::max(interior_max_abs, diff(i, j));
  const BorderBand measured = measure_band(diff, threshold);
  const int band_width = measured.sides ? *std::max_element(measured.sides->begin(), measured.sides->end())
                                        : std::max(int(height), int(width));

  const Difference whole = compare(unpadded, expected), padded = compare(fixed.actual, expected);
  const double padded_bound = fixed.bound(options.alpha);
  Outcome out;
  set_distance(out, whole);
  out.set(metric::interior_max_abs, interior_max_abs);
  out.set(metric::band_width, band_width);
  out.set(metric::band_sides, measured.sides_json());
  out.set(metric::band_sides_expected, band);
  out.set(metric::band_width_expected, *std::max_element(band.begin(), band.end()));
  out.set(metric::band_error, measured.error(band));
  out.set(metric::band_exceptions, measured.exceptions);
  out.set(metric::padded_max_abs, padded.max_abs);
  out.set(metric::padded_rel_l2, padded.rel_l2);
  out.set(metric::bound, threshold);
  out.set(metric::padded_bound, padded_bound);
  out.set(metric::alpha, options.alpha);
  out.set(metric::engine, to_string(Engine::dense));
  out.default_tolerance =
      tolerance({{metric::interior_max_abs, threshold}, {metric::band_error, 0}, {metric::padded_max_abs, padded_bound}});
  out.roundoff_tolerance = tolerance({{metric::interior_max_abs, threshold_bound.roundoff(options.alpha)},
                                      {metric::band_error, 0},
                                      {metric::padded_max_abs, fixed.bound.roundoff(options.alpha)}});
  out.message = "max_abs and rel_l2 compare the unpadded MHSA with the zero-padded \"same\" convolution over the "
                "whole image, border band included; band_error = sum over sides of |measured - expected width| "
                "plus exceptions";
  vacuous_if_zero(out, "the input", x, "the bias");
  vacuous_if_zero(out, "conv_weight (the convolution, and so the layer's values)", w, "the bias");
  out.tensors = conv_tensors<T>(x, expected, unpadded, w, b);
  out.tensors.push_back({"actual_padded", xt::xarray<T>(fixed.actual)});
  for (auto& t : mhsa_layer_tensors(fixed.layer)) out.tensors.push_back(std::move(t));
  return out;
}

using P = PaddingRemarkParams;
const bool registered = register_proof(make_proof<P>({
    .id = "cordonnier2020.padding_remark",
    .paper = cordonnier2020("remark on padding after Theorem 1"),
    .statement =
        "Without padding, the MHSA layer of Theorem 1's construction keeps the image size and equals the zero-padded "
        "\"same\" convolution in the interior; it differs in a border band of width floor(K/2) (the kernel's reach on "
        "each side); padding the image before attending removes the difference.",
    .params = {nested(&P::shape,
                      conv_shape({.kernel_help = "kernel size [K1, K2]; heads = K1*K2, head_dim = out_channels",
                                  .in_help = "D_in",
                                  .out_help = "D_out"})),
               field(&P::geometry, &ConvGeometry::dilation,
                     {.name = "dilation", .default_value = std::array<int, 2>{1, 1}, .minimum = 1}),
               nested(&P::shared, theorem1_shared()), field(&P::dtype, dtype_param())},
    .retired = {{"engine", "dense"}},
    .tensors = theorem1_tensor_names(),
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = distance_metrics(
        "the unpadded MHSA against the zero-padded \"same\" convolution, border band included",
        {metric::interior_max_abs.described("max_abs outside the expected border band (the remark: round-off)"),
         metric::band_width, metric::band_sides,
         metric::band_sides_expected.described("the kernel's reach per side: c d before, (K-1-c) d after"),
         metric::band_width_expected,
         metric::band_error.described(
             "sum over sides of |measured - expected width| plus band_exceptions (the remark: 0)"),
         metric::band_exceptions.described("pixels inside the measured box that differ or outside it that agree"),
         metric::padded_max_abs, metric::padded_rel_l2,
         metric::bound.described("the finite-alpha bound of the unpadded layer: agreement per pixel"),
         metric::padded_bound, metric::alpha, metric::engine}),
    .dumps = conv_dumps("the zero-padded \"same\" convolution, (C_out, H, W)", "the MHSA on the unpadded image",
                         mhsa_layer_dumps("(|delta|^2, delta1, delta2)",
                                          {{"actual_padded", "the MHSA after padding first (the paper's fix)"}})),
    .memory_estimate = memory_estimate,
}));

}  // namespace
}  // namespace attnconv
