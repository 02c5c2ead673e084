// Cordonnier, Loukas & Jaggi, ICLR 2020, the remark after Theorem 1 on 1D
// sequences: with N_h = K heads and a relative encoding of dimension D_p = 2,
// r_delta = (delta^2, delta), MHSA on a sequence expresses any 1D convolution
// of kernel K. Checked as Theorem 1 itself on a 1 x L image with a 1 x K kernel
// (the same construction, alignment and bound; docs/design.md, "1D remark").
#include "mhsa/dense_engine.hpp"
#include "ops/conv1d_blocked.hpp"
#include "proof/case_tensors.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"
#include "theorem1_common.hpp"

namespace attnconv {
namespace {

struct Theorem1dParams {
  std::size_t length = 0, kernel = 0, in_channels = 0, out_channels = 0;
  Conv1dGeometry geometry;
  Theorem1Options options;  // heads, head_dim, alpha, dilation (1, d), encoding quadratic_1d
  Theorem1Shared shared;
  Dtype dtype = Dtype::float64;
};

Theorem1dParams parse(const Case& c) {
  const json& padding = c.params.at("padding");
  if (padding.is_array() && padding.size() != 2)
    throw ParamError("padding", "a sequence has two sides: an int, [left, right], \"same\" or \"valid\"");
  Theorem1dParams p;
  p.length = std::size_t(get_int(c.params, "length"));
  p.kernel = std::size_t(get_int(c.params, "kernel"));
  p.in_channels = std::size_t(get_int(c.params, "in_channels"));
  p.out_channels = std::size_t(get_int(c.params, "out_channels"));
  Conv1dGeometry& g = p.geometry;
  g.groups = case_groups(c, p.in_channels, p.out_channels);
  g.stride = get_int(c.params, "stride");
  g.dilation = get_int(c.params, "dilation");
  g.padding_mode = padding_mode_from_string(c.params.at("padding_mode"));
  if (padding.is_array()) {  // [left, right]
    g.pad_left = padding[0].get<int>(), g.pad_right = padding[1].get<int>();
  } else {
    const Padding resolved = resolve_padding(padding, {1, int(p.kernel)}, {1, g.dilation});
    g.pad_left = resolved.left, g.pad_right = resolved.right;
  }
  if (padding == "same" && g.stride != 1) throw ParamError("padding", "\"same\" padding needs stride 1 (as in PyTorch)");
  p.shared = parse_theorem1_shared(c);
  p.dtype = p.shared.dtype;
  p.options.heads = get_int(c.params, "heads");
  p.options.head_dim = get_int(c.params, "head_dim");
  p.options.alpha = p.shared.alpha;
  p.options.dilation = {1, g.dilation};
  p.options.encoding = Encoding::quadratic_1d;
  check_geometry(as_2d(g), {1, int(p.length)}, {1, int(p.kernel)}, "kernel");
  check_hypotheses(c, int(p.kernel), p.options, int(p.in_channels), int(p.out_channels));
  return p;
}

// C_in / groups: the input channels of conv_weight.
std::size_t group_in(const Theorem1dParams& p) { return p.in_channels / std::size_t(p.geometry.groups); }

// The tensors a case may load instead of drawing them from the seed.
TensorShapes expected_tensors(const Theorem1dParams& p) {
  TensorShapes out{{"input", {p.in_channels, p.length}}, {"conv_weight", {p.out_channels, group_in(p), p.kernel}}};
  if (p.shared.bias) out["conv_bias"] = {p.out_channels};
  const Conv1dGeometry& g = p.geometry;
  out["reference_output"] = {p.out_channels, std::size_t(conv_output_size(int(p.length), g.pad_left, g.pad_right,
                                                                          int(p.kernel), g.stride, g.dilation))};
  return out;
}

template <class T> Outcome verify(const Case& c, const Theorem1dParams& p) {
  const CaseTensors tensors(c, p.shared.seed);
  const Sequence<T> x = tensors.get<T, 2>("input", {p.in_channels, p.length});
  const Kernel1d<T> w = tensors.get<T, 3>("conv_weight", {p.out_channels, group_in(p), p.kernel});
  const std::optional<Vector<T>> b = tensors.conv_bias<T>(p.shared.bias, p.out_channels);

  // The one place this proof chooses its MHSA engine.
  const MhsaEngine<T> engine = [](const MhsaLayer<T>& layer, const Matrix<T>& tokens, std::size_t h, std::size_t w_) {
    return mhsa_dense(layer, tokens, h, w_);
  };
  const Kernel<T> w2 = as_kernel(w);
  const Theorem1Check<T> check = check_theorem1(as_image(x), w2, b, as_2d(p.geometry), p.options, engine);

  Outcome out = construction_outcome(c, check, p.options, p.shared.engine);
  out.metrics["padding_resolved"] = {p.geometry.pad_left, p.geometry.pad_right};
  out.metrics["output_shape"] = {check.expected.shape(0), check.expected.shape(2)};
  out.tensors = conv_tensors<T>(x, as_sequence(check.expected), as_sequence(check.actual), w, b);
  return out;
}

const bool registered = register_proof(make_proof<Theorem1dParams>({
    .id = "cordonnier2020.theorem1_1d",
    .paper = cordonnier2020("Theorem 1, remark on 1D"),
    .statement = "With N_h >= K heads and the relative encoding r_delta = (delta^2, delta) (D_p = 2), a multi-head "
    "self-attention layer on a sequence can express any 1D convolution of kernel size K (with padding, stride and "
    "dilation as in 2D).",
    .params = theorem1_params({
        {.name = "length", .kind = ParamKind::integer, .default_value = nullptr, .help = "sequence length L", .minimum = 1},
        kernel_param("kernel size K", ParamKind::integer),
        {.name = "in_channels", .kind = ParamKind::integer, .default_value = nullptr, .help = "D_in", .minimum = 1},
        {.name = "out_channels", .kind = ParamKind::integer, .default_value = nullptr, .help = "D_out", .minimum = 1},
        groups_param(),
        {.name = "heads", .kind = ParamKind::integer, .default_value = nullptr, .help = "N_h (>= K for the claim)",
         .minimum = 1},
        {.name = "head_dim", .kind = ParamKind::integer, .default_value = nullptr,
         .help = "D_h (>= min(in_channels, out_channels) for an exact construction)", .minimum = 1},
        padding_param("int, [left, right], \"same\" or \"valid\""),
        padding_mode_param(),
        stride_param(ParamKind::integer),
        dilation_param(ParamKind::integer),
    }, {.name = "engine", .kind = ParamKind::string, .default_value = "dense", .help = "MHSA engine",
        .choices = {"dense"}}),
    .parse = parse,
    .verify = {verify<float>, verify<double>},
    .metrics = theorem1_metrics({
        {.name = "padding_resolved", .type = "array", .help = "[left, right]"},
        {.name = "output_shape", .type = "array", .help = "[C_out, L_out]"},
    }),
    .expected_tensors = expected_tensors,
}));

}  // namespace
}  // namespace attnconv
