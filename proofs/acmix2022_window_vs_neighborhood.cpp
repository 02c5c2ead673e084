// Pan et al., CVPR 2022, the ACmix attention path (its public reference code)
// against neighborhood attention (Hassani et al., CVPR 2023) on the same weights:
// ACmix takes each query's k_att x k_att window from the reflection-padded
// maps k, v, pe; neighborhood attention clamps the window inside the image
// (NATTEN's start). Their score q s . (k + pe_q - pe_k) is, up to the
// per-query constant q s . pe_q that the softmax drops, neighborhood
// attention's score with q' = q s, k' = k - pe and no bias. The two agree
// in the interior and differ in a border band of k_att // 2 per side,
// measured here with the size of the difference (docs/design.md, "Local attention").
#include <algorithm>
#include <cmath>
#include <xtensor/xview.hpp>

#include "acmix/pointwise.hpp"
#include "acmix/state_dict.hpp"
#include "acmix/window_attention_loop.hpp"
#include "acmix2022_case.hpp"
#include "io/errors.hpp"
#include "proof/short_number.hpp"
#include "local/neighborhood_attention.hpp"
#include "local_common.hpp"
#include "metrics/compare.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"

namespace attnconv {
namespace metric {
namespace {
const Metric allowance{.name = "allowance", .help = "the round-off allowance: agreement per pixel"};
const Metric band_relative{.name = "band_relative", .help = "band_max_abs over the largest |output|"};
const Metric attention_loop_max_abs{
    .name = "attention_loop_max_abs",
    .help = "ACmix's attention path against its independent loop (src/acmix/window_attention_loop)",
    .error = true};
}  // namespace
}  // namespace metric

namespace {

void check(AcmixParams& p, const Case& c, const Request& request) {
  check_acmix_case(p, c, request);
  if (p.config.stride != 1)
    throw ParamError("stride", "neighborhood attention keeps every query: stride must be 1");
  if (std::min(p.image[0], p.image[1]) < p.config.kernel_att)
    throw ParamError("kernel_att", "the clamped window needs every image side >= kernel_att = " +
                                       std::to_string(p.config.kernel_att));
}

template <class T> Outcome verify(const Case& c, const AcmixParams& p) {
  const AcmixCase<T> ac = acmix_case_tensors<T>(c, p);
  const AcmixConfig& config = ac.config;
  const AcmixWeights<T>& w = ac.weights;
  const int height = p.image[0], width = p.image[1], hd = config.head_dim(), ka = config.kernel_att;
  const std::size_t heads = std::size_t(config.heads);
  OpCounter counter;
  const AcmixStage1<T> s1 = acmix_stage1(w, ac.input, counter);
  const Image<T> reflected = acmix_attention_path(config, w, s1, counter);
  const Difference versus_loop = compare(reflected, window_attention_loop(config, w, ac.input));

  // The same scores with clamped windows: q' = q hd^-1/2, k' = k - pe, v' = v.
  const Image<T> pe = pointwise_conv(position_map<T>(height, width), w.conv_p_weight,
                                     std::optional<Vector<T>>(w.conv_p_bias), counter, "position");
  const T scaling = T(1) / std::sqrt(T(hd));
  HeadMaps<T> q({heads, std::size_t(height), std::size_t(width), std::size_t(hd)}), k(q.shape()), v(q.shape());
  for (std::size_t n = 0; n < heads; ++n)
    for (int i = 0; i < height; ++i)
      for (int j = 0; j < width; ++j)
        for (int d = 0; d < hd; ++d) {
          const std::size_t ch = n * std::size_t(hd) + std::size_t(d);
          q(n, i, j, d) = s1.q(ch, i, j) * scaling;
          k(n, i, j, d) = s1.k(ch, i, j) - pe(d, i, j);
          v(n, i, j, d) = s1.v(ch, i, j);
        }
  const xt::xtensor<T, 3> no_bias = xt::zeros<T>({heads, std::size_t(2 * ka - 1), std::size_t(2 * ka - 1)});
  const HeadMaps<T> clamped_heads = neighborhood_attention(q, k, v, no_bias, ka, 1);
  Image<T> clamped({std::size_t(config.out_channels), std::size_t(height), std::size_t(width)});
  for (std::size_t n = 0; n < heads; ++n)
    for (int d = 0; d < hd; ++d)
      xt::view(clamped, n * std::size_t(hd) + std::size_t(d)) = xt::view(clamped_heads, n, xt::all(), xt::all(), d);

  // Agreement to round-off: the scores are sums of hd products |q s| (|k| + 2 |pe|);
  // the dropped constant q s . pe_q is one of the terms the two forms round differently.
  const double q_max = double(xt::amax(xt::abs(q))()), k_max = double(xt::amax(xt::abs(s1.k))());
  const double pe_max = double(xt::amax(xt::abs(pe))()), v_max = double(xt::amax(xt::abs(v))());
  const double score_scale = hd * q_max * (k_max + 2 * pe_max);
  const double allowance = softmax_roundoff(double(2 * hd + 2), double(ka * ka), std::numeric_limits<T>::epsilon() / 2,
                                            score_scale, v_max, v_max);
  const BorderBand band = measure_band(pixel_difference(clamped, reflected), allowance);
  const int r = ka / 2;
  const std::array<int, 4> band_expected{r, r, r, r};
  const Difference whole = compare(clamped, reflected);
  const double scale = double(xt::amax(xt::abs(reflected))());

  Outcome out;
  set_distance(out, whole);
  out.set(metric::interior_max_abs, band.interior_max);
  out.set(metric::allowance, allowance);
  out.set(metric::band_sides, band.sides_json());
  out.set(metric::band_sides_expected, band_expected);
  out.set(metric::band_error, band.error(band_expected));
  out.set(metric::band_exceptions, band.exceptions);
  out.set(metric::band_max_abs, band.band_max);
  out.set(metric::band_relative, scale > 0 ? band.band_max / scale : band.band_max);
  out.set(metric::attention_loop_max_abs, versus_loop.max_abs);
  out.default_tolerance = tolerance(
      {{metric::interior_max_abs, allowance}, {metric::band_error, 0}, {metric::attention_loop_max_abs, allowance}});
  out.message = "reflected (ACmix) and clamped (neighborhood) windows agree to round-off in the interior and differ "
                "in a band of " + band.sides_json().dump() + " (expected " + std::to_string(r) + " per side) by up to " +
                short_number(band.band_max) + " (" + short_number(scale > 0 ? band.band_max / scale : band.band_max) +
                " of the largest output); max_abs and rel_l2 are over the whole image, band included";
  out.tensors = {{"input", xt::xarray<T>(ac.input)},
                 {"expected", xt::xarray<T>(reflected)},
                 {"actual", xt::xarray<T>(clamped)}};
  for (auto& [key, tensor] : acmix_state_dict(w)) out.tensors.push_back({key, xt::xarray<T>(tensor)});
  return out;
}

const bool registered = register_proof(make_proof<AcmixParams>({
    .id = "acmix2022.window_vs_neighborhood",
    .paper = "Pan et al., On the Integration of Self-Attention and Convolution, CVPR 2022 (the reference code's "
             "attention path), against Hassani et al., Neighborhood Attention Transformer, CVPR 2023",
    .statement = "ACmix's attention path (windows of the reflection-padded maps) and neighborhood attention (windows "
                 "clamped inside the image) on the same weights agree in the interior to round-off and differ in a "
                 "border band of kernel_att // 2 per side.",
    .params = fields<AcmixParams>(
        acmix_case_params({.kernel_conv_help = "convolution kernel of the module (unused by this proof)",
                           .stride_help = "must be 1"}),
        projection_bias_param(), field(&AcmixParams::dtype, dtype_param()), field(&AcmixParams::seed, seed_param())),
    .tensors = acmix_case_tensor_names(),
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = distance_metrics(
        "clamped against reflected windows, whole image, band included",
        {metric::interior_max_abs.described("inside the measured band: round-off"), metric::allowance,
         metric::band_sides.described("measured band [top, bottom, left, right]"),
         metric::band_sides_expected.described("kernel_att // 2 per side"),
         metric::band_error.described("sum over sides of |measured - expected| plus band_exceptions"),
         metric::band_exceptions.described("pixels inside the box that differ or outside it that agree"),
         metric::band_max_abs.described("the size of the difference in the band"), metric::band_relative,
         metric::attention_loop_max_abs}),
    .dumps = acmix_state_dict_dumps({{"input", "(C_in, H, W)"},
                                     {"expected", "ACmix's attention path, reflected windows"},
                                     {"actual", "the same weights in clamped neighborhood windows"}}),
    .memory_estimate = acmix_memory,
    .expected_tensors = acmix_case_tensor_shapes,
}));

}  // namespace
}  // namespace attnconv
