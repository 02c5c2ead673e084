// Pan et al., "On the Integration of Self-Attention and Convolution", CVPR 2022,
// Sec. 3.3: the ACmix module, as its public reference code computes it
// (docs/design.md, "ACmix module"). The harness establishes:
//  1. the convolution path IS a standard k_conv x k_conv convolution of [x; 1]
//     (zero-padded), with a kernel derived from conv1..3, fc and dep_conv
//     (expected = that convolution, actual = the path: max_abs, rel_l2);
//  2. against a plain biased convolution of x it differs only in the border
//     band of width k_conv // 2 (plain_conv_interior/border_max_abs);
//  3. the attention path equals an independent window-attention loop
//     (attention_max_abs);
//  4. out = rate1 * attention + rate2 * convolution (output_max_abs, against
//     the two independent statements); rates [0, 1] / [1, 0] give one path alone.
#include <algorithm>
#include <cmath>
#include <xtensor/xview.hpp>

#include "acmix/equivalent_kernel.hpp"
#include "acmix2022_case.hpp"
#include "acmix/state_dict.hpp"
#include "proof/short_number.hpp"
#include "acmix/window_attention_loop.hpp"
#include "metrics/compare.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"

namespace attnconv {
namespace metric {
namespace {
const Metric attention_max_abs{
    .name = "attention_max_abs", .help = "max |attention path - independent window-attention loop|", .error = true};
const Metric attention_rel_l2{
    .name = "attention_rel_l2", .help = "rel_l2 of the attention path against the loop", .error = true};
const Metric output_max_abs{
    .name = "output_max_abs", .help = "max |output - (rate1 loop + rate2 convolution)|", .error = true};
const Metric output_rel_l2{
    .name = "output_rel_l2", .help = "rel_l2 of the output against rate1 loop + rate2 convolution", .error = true};
const Metric plain_conv_interior_max_abs{.name = "plain_conv_interior_max_abs",
                                         .help = "max |convolution path - plain biased convolution| in the interior",
                                         .error = true};
const Metric plain_conv_interior_rel_l2{
    .name = "plain_conv_interior_rel_l2",
    .help = "rel_l2 of the convolution path against the plain biased convolution in the interior",
    .error = true};
const Metric plain_conv_border_max_abs{
    .name = "plain_conv_border_max_abs",
    .help = "max |convolution path - plain biased convolution| in the border band (the ones channel's effect)"};
const Metric border_band{.name = "border_band", .type = MetricType::integer, .help = "k_conv // 2"};
const Metric interior_pixels{
    .name = "interior_pixels", .type = MetricType::integer, .help = "output pixels outside the border band"};
const Metric ones_channel_kernel_max_abs{.name = "ones_channel_kernel_max_abs",
                                         .help = "max |derived kernel of the ones channel|"};
const Metric head_dim{.name = "head_dim", .type = MetricType::integer, .help = "C_out / heads"};
const Metric multiply_adds{.name = "multiply_adds",
                           .type = MetricType::object,
                           .help = "multiply-adds of the module's forward pass, per operation"};
const Metric path_alone_max_abs{.name = "path_alone_max_abs",
                                .help = "a rate of 0: max |output - the other path alone, scaled|",
                                .always = false,
                                .error = true};
}  // namespace
}  // namespace metric

namespace {

template <class T> Outcome verify(const Case& c, const AcmixParams& p) {
  const AcmixCase<T> ac = acmix_case_tensors<T>(c, p);
  const AcmixConfig& config = ac.config;
  const AcmixWeights<T>& w = ac.weights;
  OpCounter counter;
  const AcmixOutput<T> module = acmix_forward(config, w, ac.input, counter);

  // 1. The convolution path against the derived standard convolution of [x; 1].
  const EquivalentConv<T> eq = conv_path_equivalent(config, w);
  const Image<T> expected = conv2d_blocked(append_ones_channel(ac.input), eq.weight,
                                           std::optional<Vector<T>>(eq.bias), eq.geometry);
  const Difference d = compare(module.convolution, expected);

  // 2. Against the plain biased convolution of x: interior rectangle vs border band.
  const EquivalentConv<T> plain = plain_conv_of(eq);
  const Image<T> plain_out =
      conv2d_blocked(ac.input, plain.weight, std::optional<Vector<T>>(plain.bias), plain.geometry);
  const auto rows = interior_range(int(ac.input.shape(1)), config.kernel_conv, config.stride);
  const auto cols = interior_range(int(ac.input.shape(2)), config.kernel_conv, config.stride);
  double interior_max = 0, border_max = 0, interior_diff2 = 0, interior_norm2 = 0;
  std::size_t interior_pixels = 0;
  for (std::size_t o = 0; o < plain_out.shape(0); ++o)
    for (int i = 0; i < int(plain_out.shape(1)); ++i)
      for (int j = 0; j < int(plain_out.shape(2)); ++j) {
        const double e = double(plain_out(o, i, j)), difference = std::abs(double(module.convolution(o, i, j)) - e);
        const bool inside = i >= rows[0] && i <= rows[1] && j >= cols[0] && j <= cols[1];
        if (inside) {
          interior_max = std::max(interior_max, difference), interior_diff2 += difference * difference, interior_norm2 += e * e;
          interior_pixels += o == 0;
        } else {
          border_max = std::max(border_max, difference);
        }
      }
  const double interior_rel = interior_norm2 > 0 ? std::sqrt(interior_diff2 / interior_norm2) : std::sqrt(interior_diff2);

  // 3. The attention path against the independent loop.
  const Image<T> loop = window_attention_loop(config, w, ac.input);
  const Difference att = compare(module.attention, loop);

  // 4. The output against rate1 * loop + rate2 * equivalent convolution.
  const Image<T> statement = w.rate1 * loop + w.rate2 * expected;
  const Difference outd = compare(module.output, statement);

  const bool stage1_bias = xt::any(xt::not_equal(w.conv1_bias, T(0))) || xt::any(xt::not_equal(w.conv2_bias, T(0))) ||
                           xt::any(xt::not_equal(w.conv3_bias, T(0)));
  const double ones_kernel_max = double(xt::amax(xt::abs(xt::view(eq.weight, xt::all(), config.in_channels)))());

  Outcome out;
  set_distance(out, d);
  out.set(metric::attention_max_abs, att.max_abs);
  out.set(metric::attention_rel_l2, att.rel_l2);
  out.set(metric::output_max_abs, outd.max_abs);
  out.set(metric::output_rel_l2, outd.rel_l2);
  out.set(metric::plain_conv_interior_max_abs, interior_max);
  out.set(metric::plain_conv_interior_rel_l2, interior_rel);
  out.set(metric::plain_conv_border_max_abs, border_max);
  out.set(metric::border_band, config.kernel_conv / 2);
  out.set(metric::interior_pixels, interior_pixels);
  out.set(metric::ones_channel_kernel_max_abs, ones_kernel_max);
  out.set(metric::head_dim, config.head_dim());
  out.set(metric::output_shape, {expected.shape(0), expected.shape(1), expected.shape(2)});
  out.set(metric::multiply_adds, counter.multiply_adds);
  const double tol = p.dtype == Dtype::float32 ? 1e-4 : 1e-12;
  out.default_tolerance = tolerance({{metric::rel_l2, tol}, {metric::attention_rel_l2, tol}, {metric::output_rel_l2,
      tol},
                                     {metric::plain_conv_interior_rel_l2, tol}});

  std::vector<std::string> notes;
  notes.push_back("conv path = a " + std::to_string(config.kernel_conv) + "x" + std::to_string(config.kernel_conv) +
                  " convolution of [x; 1] (derived kernel), max_abs " + short_number(d.max_abs));
  if (stage1_bias)
    notes.push_back("vs a plain biased convolution: interior " + short_number(interior_max) + ", border band (width " +
                    std::to_string(config.kernel_conv / 2) + ") " + short_number(border_max) +
                    " (the Stage I biases reach the conv path through the zero-padded ones channel)");
  else
    notes.push_back("Stage I biases are zero: the ones channel is silent and the path is a plain convolution "
                    "everywhere (border " + short_number(border_max) + ")");
  if (interior_pixels == 0) notes.push_back("the image has no interior pixels: every output is in the border band");
  const std::array<double, 2> rates{double(w.rate1), double(w.rate2)};
  if (rates[0] == 0 || rates[1] == 0) {
    const Image<T>& alone = rates[0] == 0 ? module.convolution : module.attention;
    const double scale = rates[0] == 0 ? rates[1] : rates[0];
    const double alone_max = compare(module.output, Image<T>(T(scale) * alone)).max_abs;
    out.set(metric::path_alone_max_abs, alone_max);
    out.default_tolerance["path_alone_max_abs"] = 0.0;
    notes.push_back(std::string("rate") + (rates[0] == 0 ? "1" : "2") + " = 0: the output is the " +
                    (rates[0] == 0 ? "convolution" : "attention") + " path alone (max_abs " + short_number(alone_max) + ")");
  }
  if (w.dep_conv_bias) notes.push_back("dep_conv has a bias (an extension: the reference drops it)");
  if (config.kernel_conv != 3)
    notes.push_back("dep_conv padding is k_conv // 2 = " + std::to_string(config.kernel_conv / 2) +
                    " (the reference hard-codes 1, which breaks for k_conv != 3)");
  if (!ac.loaded.empty()) {
    std::string keys;
    for (const auto& key : ac.loaded) keys += (keys.empty() ? "" : ", ") + key;
    notes.push_back("loaded from .npy: " + keys);
  }
  for (const auto& note : notes) out.message += (out.message.empty() ? "" : "; ") + note;

  out.tensors = {{"input", xt::xarray<T>(ac.input)},
                 {"expected", xt::xarray<T>(expected)},
                 {"actual", xt::xarray<T>(module.convolution)},
                 {"attention_out", xt::xarray<T>(module.attention)},
                 {"conv_out", xt::xarray<T>(module.convolution)},
                 {"output", xt::xarray<T>(module.output)},
                 {"conv_weight", xt::xarray<T>(eq.weight)},
                 {"conv_bias", xt::xarray<T>(eq.bias)}};
  out.reference_tensor = "output";
  for (auto& [key, tensor] : acmix_state_dict(w)) out.tensors.push_back({key, std::move(tensor)});
  return out;
}

const bool registered = register_proof(make_proof<AcmixParams>({
    .id = "acmix2022.module",
    .paper = "Pan et al., On the Integration of Self-Attention and Convolution, CVPR 2022, Sec. 3.3 (ACmix), with the "
             "public reference code's conventions",
    .statement =
        "ACmix shares three 1x1 projections between a window self-attention path and a convolution path (fc + "
        "shift-initialised grouped convolution); out = rate1 * attention + rate2 * convolution. Established here: the "
        "convolution path is a standard k_conv x k_conv convolution of the input with a constant-ones channel appended "
        "(zero-padded), which differs from a plain biased convolution only in the border band of width k_conv // 2.",
    .params = fields<AcmixParams>(
        acmix_case_params({.kernel_conv_help = "convolution kernel (odd; padding kernel_conv // 2)",
                           .stride_help = "output ceil(H/s) x ceil(W/s)"}),
        field(&AcmixParams::init, &AcmixInit::dep_init,
              {.name = "dep_init",
               .help = "dep_conv weights: the reference's shift kernels or random; \"loaded\": read from the weights "
                       "(what the report gives when they hold dep_conv.weight)",
               .default_value = "shift",
               .choices = {"shift", "random", "loaded"}}),
        field(&AcmixParams::init, &AcmixInit::rates,
              {.name = "rates", .help = "[rate1, rate2]", .default_value = std::array<double, 2>{0.5, 0.5}}),
        projection_bias_param(),
        field(&AcmixParams::init, &AcmixInit::dep_conv_bias,
              {.name = "dep_conv_bias",
               .help = "give dep_conv a bias (an extension; the reference has none)",
               .default_value = false}),
        field(&AcmixParams::dtype, dtype_param()),
        field(&AcmixParams::seed, seed_param("seed of the input and parameters"))),
    .tensors = acmix_case_tensor_names(),
    .check = check_acmix_case,
    .verify = {verify<float>, verify<double>},
    .metrics = distance_metrics(
        "the convolution path against the standard convolution of [x; 1]",
        {metric::attention_max_abs, metric::attention_rel_l2, metric::output_max_abs, metric::output_rel_l2,
         metric::plain_conv_interior_max_abs, metric::plain_conv_interior_rel_l2, metric::plain_conv_border_max_abs,
         metric::border_band, metric::interior_pixels, metric::ones_channel_kernel_max_abs, metric::head_dim,
         metric::output_shape, metric::multiply_adds, metric::path_alone_max_abs}),
    .dumps = acmix_state_dict_dumps({
        {"input", "(C_in, H, W)"},
        {"expected", "the convolution of [x; 1] by the derived kernel, (C_out, ceil(H/s), ceil(W/s))"},
        {"actual", "the module's convolution path"},
        {"conv_out", "the module's convolution path"},
        {"attention_out", "its attention path"},
        {"output", "rate1 attention + rate2 convolution"},
        {"conv_weight", "(C_out, C_in + 1, k, k): the derived kernel, the last input channel the ones channel; "
                        "F.conv2d(torch.cat([x, ones], 1), conv_weight, conv_bias, stride=s, padding=k // 2) is the "
                        "convolution path"},
        {"conv_bias", "(C_out)"}}),
    .memory_estimate = acmix_memory,
    .expected_tensors = acmix_case_tensor_shapes,
    .loaded_params = acmix_loaded_params,
}));

}  // namespace
}  // namespace attnconv
