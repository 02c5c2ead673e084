// Cordonnier, Loukas & Jaggi, "On the Relationship between Self-Attention and
// Convolutional Layers", ICLR 2020, Theorem 1: a multi-head self-attention
// layer with N_h heads of dimension D_h, output dimension D_out and a relative
// positional encoding of dimension D_p >= 3 can express any convolutional layer
// of kernel size sqrt(N_h) x sqrt(N_h) and min(D_h, D_out) output channels.
// Padding, stride and dilation by the paper's remarks: attend over the padded
// image, then crop and subsample (DESIGN.md).
#include <algorithm>
#include <cmath>
#include <limits>

#include <xtensor-blas/xlinalg.hpp>

#include "construction/theorem1.hpp"
#include "harness/errors.hpp"
#include "harness/npy.hpp"
#include "metrics/compare.hpp"
#include "mhsa/dense_engine.hpp"
#include "tensor/random.hpp"

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
  const auto image = get_int_pair(c.params, "image"), kernel = get_int_pair(c.params, "kernel");
  const ConvGeometry g = geometry_of(c);
  if (c.params["padding"] == "same" && g.stride != std::array<int, 2>{1, 1})
    throw ParamError("padding", "\"same\" padding needs stride 1 (as in PyTorch)");
  const std::array<int, 4> pads{g.padding.top, g.padding.bottom, g.padding.left, g.padding.right};
  for (int side = 0; side < 4; ++side) {
    const int extent = image[side / 2];
    if (g.padding_mode == PaddingMode::reflect && pads[side] >= extent)
      throw ParamError("padding", "reflect padding must be smaller than the image side (" + std::to_string(pads[side]) +
                                      " >= " + std::to_string(extent) + ")");
    if (g.padding_mode == PaddingMode::circular && pads[side] > extent)
      throw ParamError("padding", "circular padding must not exceed the image side (" + std::to_string(pads[side]) +
                                      " > " + std::to_string(extent) + ")");
  }
  for (int axis = 0; axis < 2; ++axis) {
    const int before = axis ? g.padding.left : g.padding.top, after = axis ? g.padding.right : g.padding.bottom;
    if (conv_output_size(image[axis], before, after, kernel[axis], g.stride[axis], g.dilation[axis]) < 1)
      throw ParamError("kernel", "the receptive field " + std::to_string(g.dilation[axis] * (kernel[axis] - 1) + 1) +
                                     " exceeds the padded image (" +
                                     std::to_string(image[axis] + before + after) + ") along axis " +
                                     std::to_string(axis));
  }
  // A typo in "weights" must not fall back silently to random numbers.
  const std::vector<std::string> tensors{"input", "conv_weight", "conv_bias"};
  for (const auto& [key, value] : c.weights.items())
    if (std::find(tensors.begin(), tensors.end(), key) == tensors.end()) {
      const std::string best = closest(key, tensors);
      throw InputError(c.file + ": case '" + c.name + "': key 'weights." + key + "': unknown tensor" +
                       (best.empty() ? "" : " (did you mean '" + best + "'?)") + "; expected input, conv_weight, conv_bias");
    }
  if (c.expect == "hold") {
    if (get_int(c.params, "heads") < kernel[0] * kernel[1])
      throw ParamError("heads", "Theorem 1 needs heads >= K1*K2 = " + std::to_string(kernel[0] * kernel[1]) +
                                    "; set \"expect\": \"fail\" to check the converse");
    if (get_int(c.params, "head_dim") < get_int(c.params, "out_channels"))
      throw ParamError("head_dim", "Theorem 1 needs head_dim >= out_channels = " +
                                       std::to_string(get_int(c.params, "out_channels")) +
                                       "; set \"expect\": \"fail\" to check the rank-limited case");
  }
}

// s = sum_{n>=1} e^{-alpha n^2}; 1 - P_{q,q+Delta} <= eps(alpha) = 4 s (1 + s)
// (DESIGN.md, "Finite alpha"; never (1 + 2s)^2 - 1, which cancels to 0).
double attention_leak(double alpha) {
  double s = 0;
  for (int n = 1; n < 64; ++n) {
    const double term = std::exp(-alpha * n * n);
    s += term;
    if (term < 1e-300 || term < s * 1e-17) break;
  }
  return 4 * s * (1 + s);
}

template <class T> Outcome verify_typed(const Case& c) {
  const auto image = get_int_pair(c.params, "image"), kernel = get_int_pair(c.params, "kernel");
  const std::size_t c_in = std::size_t(get_int(c.params, "in_channels")), c_out = std::size_t(get_int(c.params, "out_channels"));
  const ConvGeometry g = geometry_of(c);
  const bool has_bias = c.params.at("bias").get<bool>();

  // Inputs: drawn from the seed, one independent stream per tensor, or loaded.
  const Random random(std::uint64_t(c.params.at("seed").get<long long>()));
  const std::vector<std::size_t> x_shape{c_in, std::size_t(image[0]), std::size_t(image[1])};
  const std::vector<std::size_t> w_shape{c_out, c_in, std::size_t(kernel[0]), std::size_t(kernel[1])};
  const Image<T> x = has_case_tensor(c, "input")
                         ? Image<T>(load_case_tensor<T>(c, "input", x_shape))
                         : random.stream(purpose_id("input")).uniform_tensor<T, 3>({x_shape[0], x_shape[1], x_shape[2]});
  const Kernel<T> w = has_case_tensor(c, "conv_weight")
                          ? Kernel<T>(load_case_tensor<T>(c, "conv_weight", w_shape))
                          : random.stream(purpose_id("conv_weight")).uniform_tensor<T, 4>({c_out, c_in, w_shape[2], w_shape[3]});
  std::optional<Vector<T>> b;
  if (has_bias)
    b = has_case_tensor(c, "conv_bias") ? Vector<T>(load_case_tensor<T>(c, "conv_bias", {c_out}))
                                        : random.stream(purpose_id("conv_bias")).uniform_tensor<T, 1>({c_out});

  const Image<T> expected = conv2d_reference(x, w, b, g);

  Theorem1Options options;
  options.heads = get_int(c.params, "heads");
  options.head_dim = get_int(c.params, "head_dim");
  options.alpha = get_number(c.params, "alpha");
  options.dilation = g.dilation;
  const MhsaLayer<T> layer = theorem1_layer(w, b, options);

  const Image<T> xpad = pad(x, g.padding, g.padding_mode);
  const std::size_t hp = xpad.shape(1), wp = xpad.shape(2);
  const Matrix<T> tokens = image_to_tokens(xpad);
  const Image<T> mhsa_out = tokens_to_image(mhsa_dense(layer, tokens, hp, wp), hp, wp);
  const Image<T> actual =
      align_to_convolution(mhsa_out, kernel, g, {int(expected.shape(1)), int(expected.shape(2))});

  // The finite-alpha bound: eps(alpha) * sum_h 2 max_k |X_k W_val^h W_out^h|,
  // plus a round-off allowance u * n * sum_h max_k (|X_k| |W_val^h| |W_out^h|),
  // n = the longest sum in either computation (gamma_n model, Higham 2002 3.1).
  const double alpha = options.alpha, leak = attention_leak(alpha);
  const std::size_t d_h = layer.head_dim();
  double head_scale = 0, abs_scale = b ? double(xt::amax(xt::abs(*b))()) : 0.0;
  for (std::size_t h = 0; h < layer.heads.size(); ++h) {
    const Matrix<T> w_out_h = xt::view(layer.w_out, xt::range(h * d_h, (h + 1) * d_h), xt::all());
    const xt::xtensor<double, 2> m = xt::cast<double>(xt::linalg::dot(layer.heads[h].w_val, w_out_h));
    const xt::xtensor<double, 2> m_abs = xt::linalg::dot(xt::abs(xt::cast<double>(layer.heads[h].w_val)),
                                                         xt::abs(xt::cast<double>(w_out_h)));
    const xt::xtensor<double, 2> xd = xt::cast<double>(tokens);
    head_scale += double(xt::amax(xt::abs(xt::linalg::dot(xd, m)))());
    abs_scale += double(xt::amax(xt::linalg::dot(xt::abs(xd), m_abs))());
  }
  const double unit_roundoff = std::numeric_limits<T>::epsilon() / 2;
  const double longest_sum = double(hp * wp + c_in * std::size_t(kernel[0] * kernel[1]) + layer.heads.size() * d_h + c_in);
  const double roundoff = 2 * unit_roundoff * longest_sum * abs_scale;
  const double bound = leak * 2 * head_scale + roundoff;

  const Difference d = compare(actual, expected);
  Outcome out;
  out.metrics = {{"max_abs", d.max_abs},
                 {"rel_l2", d.rel_l2},
                 {"alpha", alpha},
                 {"engine", "dense"},
                 {"bound", bound},
                 {"attention_leak", leak},
                 {"roundoff_allowance", roundoff},
                 {"padding_resolved", {g.padding.top, g.padding.bottom, g.padding.left, g.padding.right}},
                 {"output_shape", {expected.shape(0), expected.shape(1), expected.shape(2)}}};
  if (options.head_dim < int(c_out)) {
    out.metrics["eckart_young"] = eckart_young_tail(w, options.head_dim);
    out.message = "head_dim " + std::to_string(options.head_dim) + " < out_channels " + std::to_string(c_out) +
                  ": each kernel slice is only approximated by its best rank-" + std::to_string(options.head_dim) +
                  " factorisation (Eckart-Young distance " + std::to_string(double(out.metrics["eckart_young"])) + ")";
  }
  if (options.heads < kernel[0] * kernel[1]) {
    out.message += std::string(out.message.empty() ? "" : "; ") + "only " + std::to_string(options.heads) + " heads for " +
                   std::to_string(kernel[0] * kernel[1]) + " kernel positions: the positions without a head are missing";
  }
  out.tensors = {{"input", xt::xarray<T>(x)},     {"expected", xt::xarray<T>(expected)},
                 {"actual", xt::xarray<T>(actual)}, {"conv_weight", xt::xarray<T>(w)}};
  out.tensors.push_back({"conv_bias", xt::xarray<T>(b ? *b : Vector<T>(xt::zeros<T>({c_out})))});
  return out;
}

const bool registered = register_proof({
    "cordonnier2020.theorem1",
    "Cordonnier, Loukas & Jaggi, On the Relationship between Self-Attention and Convolutional Layers, ICLR 2020, "
    "Theorem 1",
    "A multi-head self-attention layer with N_h heads of dimension D_h, output dimension D_out and a relative "
    "positional encoding of dimension D_p >= 3 can express any convolutional layer of kernel size "
    "sqrt(N_h) x sqrt(N_h) and min(D_h, D_out) output channels (with padding, stride and dilation by the paper's "
    "remarks).",
    {
        {"image", ParamKind::int_pair, nullptr, "image size [H, W]", 1},
        {"kernel", ParamKind::int_pair, nullptr, "kernel size [K1, K2]", 1},
        {"in_channels", ParamKind::integer, nullptr, "D_in", 1},
        {"out_channels", ParamKind::integer, nullptr, "D_out", 1},
        {"heads", ParamKind::integer, nullptr, "N_h (>= K1*K2 for the claim)", 1},
        {"head_dim", ParamKind::integer, nullptr, "D_h (>= out_channels for an exact construction)", 1},
        {"padding", ParamKind::padding, 0, "int, [ph, pw], [top, bottom, left, right], \"same\" or \"valid\""},
        {"padding_mode", ParamKind::string, "zeros", "", std::nullopt, false, {"zeros", "reflect", "replicate", "circular"}},
        {"stride", ParamKind::int_pair, 1, "", 1},
        {"dilation", ParamKind::int_pair, 1, "", 1},
        {"bias", ParamKind::boolean, true, "whether the convolution has a bias"},
        {"alpha", ParamKind::number, 60.0, "attention sharpness (> 0)", 0.0, true},
        {"dtype", ParamKind::string, "float64", "", std::nullopt, false, {"float32", "float64"}},
        {"seed", ParamKind::integer, 0, "seed of the inputs and weights", 0},
        {"engine", ParamKind::string, "dense", "MHSA engine", std::nullopt, false, {"dense"}},
    },
    validate,
    [](const Case& c) { return with_dtype(c, [&](auto tag) { return verify_typed<decltype(tag)>(c); }); },
    nullptr,
});

}  // namespace
}  // namespace attnconv
