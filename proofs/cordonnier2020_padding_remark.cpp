// Cordonnier, Loukas & Jaggi, ICLR 2020, the remark on padding after Theorem 1:
// MHSA on the unpadded image keeps the image size, like a "SAME" convolution,
// but near the border a head's target pixel q + Delta does not exist, so it
// attends to the nearest pixels instead of reading the zero padding. The
// outputs agree in the interior and differ in a border band whose width on
// each side is the reach of the kernel there (c*d before, (K-1-c)*d after,
// c = (K-1)//2; floor(K/2) for dilation 1); padding the image first (the
// paper's fix, as in Theorem 1's proof) removes the band.
#include <algorithm>
#include <numeric>

#include "mhsa/dense_engine.hpp"
#include "metrics/compare.hpp"
#include "proof/case_tensors.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"
#include "theorem1_common.hpp"

namespace attnconv {
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

PaddingRemarkParams parse(const Case& c) {
  PaddingRemarkParams p;
  p.shape = case_conv_shape(c);
  p.geometry.dilation = get_int_pair(c.params, "dilation");
  p.geometry.padding = same_padding(p.shape.kernel, p.geometry.dilation);
  p.geometry.groups = p.shape.groups;
  p.shared = parse_theorem1_shared(c);
  p.dtype = p.shared.dtype;
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
  return p;
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

  // Where they differ: per pixel, the largest difference over channels.
  xt::xtensor<double, 2> diff = xt::zeros<double>({height, width});
  for (std::size_t o = 0; o < c_out; ++o)
    for (std::size_t i = 0; i < height; ++i)
      for (std::size_t j = 0; j < width; ++j)
        diff(i, j) = std::max(diff(i, j), std::abs(double(unpadded(o, i, j)) - double(expected(o, i, j))));

  const auto band = expected_band(kernel, g.dilation);
  double interior_max_abs = 0;
  for (std::size_t i = std::size_t(band[0]); i + std::size_t(band[1]) < height; ++i)
    for (std::size_t j = std::size_t(band[2]); j + std::size_t(band[3]) < width; ++j)
      interior_max_abs = std::max(interior_max_abs, diff(i, j));

  // The measured band: the bounding box of the pixels that agree (difference
  // within the bound); the band is everything outside it. Pixels inside the
  // box that differ, or outside it that agree, are counted as exceptions.
  int top = int(height), bottom = -1, left = int(width), right = -1;
  for (int i = 0; i < int(height); ++i)
    for (int j = 0; j < int(width); ++j)
      if (diff(std::size_t(i), std::size_t(j)) <= threshold)
        top = std::min(top, i), bottom = std::max(bottom, i), left = std::min(left, j), right = std::max(right, j);
  json measured = nullptr;
  int exceptions = 0, band_error = 0, band_width = std::max(int(height), int(width));
  if (bottom >= 0) {
    const std::array<int, 4> sides{top, int(height) - 1 - bottom, left, int(width) - 1 - right};
    measured = sides;
    band_width = *std::max_element(sides.begin(), sides.end());
    for (int s = 0; s < 4; ++s) band_error += std::abs(sides[std::size_t(s)] - band[std::size_t(s)]);
    for (int i = 0; i < int(height); ++i)
      for (int j = 0; j < int(width); ++j) {
        const bool inside = i >= top && i <= bottom && j >= left && j <= right;
        const bool agrees = diff(std::size_t(i), std::size_t(j)) <= threshold;
        exceptions += inside != agrees;
      }
  } else {
    band_error = std::accumulate(band.begin(), band.end(), 0) + 1;  // no pixel agrees: no interior found
  }

  const Difference whole = compare(unpadded, expected), padded = compare(fixed.actual, expected);
  const double padded_bound = fixed.bound(options.alpha);
  Outcome out;
  out.metrics = {{"max_abs", whole.max_abs},
                 {"rel_l2", whole.rel_l2},
                 {"interior_max_abs", interior_max_abs},
                 {"band_width", band_width},
                 {"band_sides", measured},
                 {"band_sides_expected", band},
                 {"band_width_expected", *std::max_element(band.begin(), band.end())},
                 {"band_error", band_error + exceptions},
                 {"band_exceptions", exceptions},
                 {"padded_max_abs", padded.max_abs},
                 {"padded_rel_l2", padded.rel_l2},
                 {"bound", threshold},
                 {"padded_bound", padded_bound},
                 {"alpha", options.alpha},
                 {"engine", p.shared.engine}};
  out.default_tolerance = {{"interior_max_abs", threshold}, {"band_error", 0}, {"padded_max_abs", padded_bound}};
  out.roundoff_tolerance = {{"interior_max_abs", threshold_bound.roundoff(options.alpha)},
                            {"band_error", 0},
                            {"padded_max_abs", fixed.bound.roundoff(options.alpha)}};
  out.message = "max_abs and rel_l2 compare the unpadded MHSA with the zero-padded \"same\" convolution over the "
                "whole image, border band included; band_error = sum over sides of |measured - expected width| "
                "plus exceptions";
  out.tensors = conv_tensors<T>(x, expected, unpadded, w, b);
  out.tensors.push_back({"actual_padded", xt::xarray<T>(fixed.actual)});
  return out;
}

const bool registered = register_proof(make_proof<PaddingRemarkParams>({
    .id = "cordonnier2020.padding_remark",
    .paper = cordonnier2020("remark on padding after Theorem 1"),
    .statement = "Without padding, the MHSA layer of Theorem 1's construction keeps the image size and equals the zero-padded "
    "\"same\" convolution in the interior; it differs in a border band of width floor(K/2) (the kernel's reach on "
    "each side); padding the image before attending removes the difference.",
    .params = theorem1_params({
        image_param(),
        kernel_param("kernel size [K1, K2]; heads = K1*K2, head_dim = out_channels"),
        {.name = "in_channels", .kind = ParamKind::integer, .default_value = nullptr, .help = "D_in", .minimum = 1},
        {.name = "out_channels", .kind = ParamKind::integer, .default_value = nullptr, .help = "D_out", .minimum = 1},
        groups_param(),
        dilation_param(),
    }, {.name = "engine", .kind = ParamKind::string, .default_value = "dense", .help = "MHSA engine",
        .choices = {"dense"}}),
    .parse = parse,
    .verify = {verify<float>, verify<double>},
    .metrics = distance_metrics("the unpadded MHSA against the zero-padded \"same\" convolution, border band included", {
          {.name = "interior_max_abs", .type = "number",
           .help = "max_abs outside the expected border band (the remark: round-off)", .error = true},
          {.name = "band_width", .type = "integer", .help = "the widest side of the measured border band"},
          {.name = "band_sides", .type = "array",
           .help = "measured band per side [top, bottom, left, right]; null when no pixel agrees", .nullable = true},
          {.name = "band_sides_expected", .type = "array", .help = "the kernel's reach per side: c d before, (K-1-c) d after"},
          {.name = "band_width_expected", .type = "integer", .help = "the widest side of band_sides_expected"},
          {.name = "band_error", .type = "integer",
           .help = "sum over sides of |measured - expected width| plus band_exceptions (the remark: 0)", .error = true},
          {.name = "band_exceptions", .type = "integer",
           .help = "pixels inside the measured box that differ or outside it that agree", .error = true},
          {.name = "padded_max_abs", .type = "number",
           .help = "max_abs after the paper's fix (pad, attend, crop): round-off", .error = true},
          {.name = "padded_rel_l2", .type = "number", .help = "rel_l2 after the paper's fix", .error = true},
          {.name = "bound", .type = "number", .help = "the finite-alpha bound of the unpadded layer: agreement per pixel"},
          {.name = "padded_bound", .type = "number", .help = "the finite-alpha bound of the padded construction"},
          {.name = "alpha", .type = "number", .help = "the attention sharpness used"},
          {.name = "engine", .type = "string", .help = "the MHSA engine that ran"},
      }),
}));

}  // namespace
}  // namespace attnconv
