// Cordonnier, Loukas & Jaggi, "On the Relationship between Self-Attention and
// Convolutional Layers", ICLR 2020, Theorem 1: a multi-head self-attention
// layer with N_h heads of dimension D_h, output dimension D_out and a relative
// positional encoding of dimension D_p >= 3 can express any convolutional layer
// of kernel size sqrt(N_h) x sqrt(N_h) and min(D_h, D_out) output channels.
// Any K1 x K2 kernel; padding, stride and dilation by the paper's remarks:
// attend over the padded image, then crop and subsample (docs/design.md,
// "Padding, stride, dilation"). The encoding is the theorem's quadratic one
// (D_p = 3) or the paper's generalised quadratic encoding with a full precision
// per head (D_p = 5).
#include "mhsa/engine.hpp"
#include "theorem1_common.hpp"

namespace attnconv {
namespace {

ConvGeometry geometry_of(const Case& c) {
  const auto kernel = get_int_pair(c.params, "kernel");
  ConvGeometry g;
  g.dilation = get_int_pair(c.params, "dilation");
  g.stride = get_int_pair(c.params, "stride");
  g.padding = resolve_padding(c.params.at("padding"), kernel, g.dilation);
  g.padding_mode = padding_mode_from_string(c.params.at("padding_mode"));
  return g;
}

void validate(const Case& c) {
  const auto kernel = get_int_pair(c.params, "kernel");
  const ConvGeometry g = geometry_of(c);
  if (c.params["padding"] == "same" && g.stride != std::array<int, 2>{1, 1})
    throw ParamError("padding", "\"same\" padding needs stride 1 (as in PyTorch)");
  check_geometry(g, get_int_pair(c.params, "image"), kernel, "kernel");
  check_hypotheses(c, kernel[0] * kernel[1]);
}

// The tensors a case may load instead of drawing them from the seed.
std::map<std::string, std::vector<std::size_t>> expected_tensors(const Case& c) {
  const auto image = get_int_pair(c.params, "image"), kernel = get_int_pair(c.params, "kernel");
  const std::size_t c_in = std::size_t(get_int(c.params, "in_channels")), c_out = std::size_t(get_int(c.params, "out_channels"));
  std::map<std::string, std::vector<std::size_t>> out{
      {"input", {c_in, std::size_t(image[0]), std::size_t(image[1])}},
      {"conv_weight", {c_out, c_in, std::size_t(kernel[0]), std::size_t(kernel[1])}}};
  if (c.params.at("bias").get<bool>()) out["conv_bias"] = {c_out};
  return out;
}

// Bytes at the peak of a check: the larger of (during the MHSA) the inputs, the
// convolution, the padded image, its tokens and the engine, and (at the end)
// those plus the MHSA output as tokens and image, the aligned output, the
// bound's float64 copies of the tokens and its products, and the copies handed
// to the report; plus the process itself (program, libraries, OpenBLAS
// buffers, 16 MiB). Within a factor 2 of the measured peak RSS (README, "Performance").
double memory_estimate(const Case& c) {
  const auto image = get_int_pair(c.params, "image"), kernel = get_int_pair(c.params, "kernel");
  const ConvGeometry g = geometry_of(c);
  const double s = c.params.at("dtype") == "float32" ? 4 : 8;
  const double c_in = get_int(c.params, "in_channels"), c_out = get_int(c.params, "out_channels");
  const double heads = get_int(c.params, "heads"), d_h = get_int(c.params, "head_dim");
  const std::size_t hp = std::size_t(image[0] + g.padding.top + g.padding.bottom);
  const std::size_t wp = std::size_t(image[1] + g.padding.left + g.padding.right);
  const double n = double(hp) * double(wp), pixels = double(image[0]) * image[1];
  const double out_pixels =
      double(conv_output_size(image[0], g.padding.top, g.padding.bottom, kernel[0], g.stride[0], g.dilation[0])) *
      conv_output_size(image[1], g.padding.left, g.padding.right, kernel[1], g.stride[1], g.dilation[1]);
  const double layer = s * heads * (c_in * (d_h + 6) + d_h * c_out);
  const double inputs = s * (c_in * pixels + c_out * c_in * kernel[0] * kernel[1] + c_out * out_pixels + 2 * c_in * n) + layer;
  // The Theorem 1 layer has no content terms: auto runs the separable engine.
  // Its D_k = D_p, counted as the widest encoding's (quadratic_general, 5).
  const Engine engine = c.params.at("engine") == "dense" ? Engine::dense : Engine::separable;
  const std::size_t d_k = std::size_t(encoding_dim(Encoding::quadratic_general));
  const double during_mhsa = inputs + engine_memory_bytes(engine, hp, wp, std::size_t(c_in), d_k, std::size_t(d_h),
                                                          std::size_t(c_out), std::size_t(s));
  const double at_end = inputs + s * (2 * c_out * n + 2 * c_out * out_pixels + c_in * pixels + c_out * out_pixels) +
                        8 * (2 * c_in * n + c_out * n);
  const double process = 16.0 * (1 << 20);
  return process + std::max(during_mhsa, at_end);
}

template <class T> Outcome verify_typed(const Case& c) {
  const auto image = get_int_pair(c.params, "image"), kernel = get_int_pair(c.params, "kernel");
  const std::size_t c_in = std::size_t(get_int(c.params, "in_channels")), c_out = std::size_t(get_int(c.params, "out_channels"));
  const ConvGeometry g = geometry_of(c);

  const Image<T> x = case_tensor<T, 3>(c, "input", {c_in, std::size_t(image[0]), std::size_t(image[1])});
  const Kernel<T> w = case_tensor<T, 4>(c, "conv_weight", {c_out, c_in, std::size_t(kernel[0]), std::size_t(kernel[1])});
  const std::optional<Vector<T>> b = case_bias<T>(c, c_out);

  Theorem1Options options;
  options.heads = get_int(c.params, "heads");
  options.head_dim = get_int(c.params, "head_dim");
  options.alpha = get_number(c.params, "alpha");
  options.dilation = g.dilation;
  options.encoding = encoding_from_string(c.params.at("encoding"));
  if (options.encoding == Encoding::quadratic_general)
    options.precision = random_precisions(std::uint64_t(c.params.at("seed").get<long long>()), options.heads);

  // The one place this proof chooses its MHSA engine (mhsa/engine.hpp: auto runs
  // the exact separable engine on this layer, which has no content terms).
  EngineResult<T> ran{};
  const MhsaEngine<T> engine = [&](const MhsaLayer<T>& layer, const Matrix<T>& tokens, std::size_t h, std::size_t w_) {
    ran = run_mhsa(engine_from_string(c.params.at("engine")), layer, tokens, h, w_);
    return ran.y;
  };
  const Theorem1Check<T> check = check_theorem1(x, w, b, g, options, engine);

  Outcome out = construction_outcome(c, check, w, options, to_string(ran.ran));
  out.metrics["flops"] = ran.flops;
  out.metrics["flops_skipped"] = ran.flops_skipped;
  out.metrics["memory_estimate_bytes"] = memory_estimate(c);
  out.metrics["padding_resolved"] = {g.padding.top, g.padding.bottom, g.padding.left, g.padding.right};
  out.metrics["output_shape"] = {check.expected.shape(0), check.expected.shape(1), check.expected.shape(2)};
  out.tensors = conv_tensors<T>(x, check.expected, check.actual, w, b);
  return out;
}

const bool registered = register_proof({
    "cordonnier2020.theorem1",
    cordonnier2020("Theorem 1"),
    "A multi-head self-attention layer with N_h heads of dimension D_h, output dimension D_out and a relative "
    "positional encoding of dimension D_p >= 3 can express any convolutional layer of kernel size "
    "sqrt(N_h) x sqrt(N_h) and min(D_h, D_out) output channels (with padding, stride and dilation by the paper's "
    "remarks).",
    theorem1_params({
        {"image", ParamKind::int_pair, nullptr, "image size [H, W]", 1},
        {"kernel", ParamKind::int_pair, nullptr, "kernel size [K1, K2]", 1, false, {}, 4096},
        {"in_channels", ParamKind::integer, nullptr, "D_in", 1},
        {"out_channels", ParamKind::integer, nullptr, "D_out", 1},
        {"heads", ParamKind::integer, nullptr, "N_h (>= K1*K2 for the claim)", 1},
        {"head_dim", ParamKind::integer, nullptr, "D_h (>= out_channels for an exact construction)", 1},
        {"padding", ParamKind::padding, 0, "int, [ph, pw], [top, bottom, left, right], \"same\" or \"valid\""},
        {"padding_mode", ParamKind::string, "zeros", "", std::nullopt, false, {"zeros", "reflect", "replicate", "circular"}},
        {"stride", ParamKind::int_pair, 1, "", 1},
        {"dilation", ParamKind::int_pair, 1, "", 1, false, {}, 4096},
        {"encoding", ParamKind::string, "quadratic",
         "\"quadratic\": r = (|delta|^2, delta1, delta2), D_p = 3 (the theorem); \"quadratic_general\": "
         "r = (delta1^2, delta2^2, delta1 delta2, delta1, delta2), D_p = 5, precision alpha*A per head with a seeded "
         "random SPD A of unit smallest eigenvalue",
         std::nullopt, false, {"quadratic", "quadratic_general"}},
    }, {"engine", ParamKind::string, "auto", "MHSA engine: dense, separable (exact only without content terms), "
                   "auto (separable where exact)", std::nullopt, false, {"dense", "separable", "auto"}}),
    validate,
    [](const Case& c) { return with_dtype(c, [&](auto tag) { return verify_typed<decltype(tag)>(c); }); },
    memory_estimate,
    theorem1_metrics({
        {.name = "flops", .type = "number",
         .help = "floating-point operations of the MHSA engine that ran (dense_flops / separable_flops)"},
        {.name = "flops_skipped", .type = "number",
         .help = "of flops, the P V products skipped because P was exactly 0 (dense)"},
        {.name = "memory_estimate_bytes", .type = "number",
         .help = "the proof's memory_estimate for this case (bytes at peak)"},
        {.name = "padding_resolved", .type = "array", .help = "[top, bottom, left, right]"},
        {.name = "output_shape", .type = "array", .help = "[C_out, H_out, W_out]"},
    }),
    expected_tensors,
});

}  // namespace
}  // namespace attnconv
