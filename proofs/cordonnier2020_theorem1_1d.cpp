// Cordonnier, Loukas & Jaggi, ICLR 2020, the remark after Theorem 1 on 1D
// sequences: with N_h = K heads and a relative encoding of dimension D_p = 2,
// r_delta = (delta^2, delta), MHSA on a sequence expresses any 1D convolution
// of kernel K. Checked as Theorem 1 itself on a 1 x L image with a 1 x K kernel
// (the same construction, alignment and bound; docs/design.md, "1D remark").
#include "mhsa/dense_engine.hpp"
#include "ops/conv1d_blocked.hpp"
#include "theorem1_common.hpp"

namespace attnconv {
namespace {

Conv1dGeometry geometry_of(const Case& c) {
  const json& p = c.params.at("padding");
  Conv1dGeometry g;
  g.stride = get_int(c.params, "stride");
  g.dilation = get_int(c.params, "dilation");
  g.padding_mode = padding_mode_from_string(c.params.at("padding_mode"));
  if (p.is_array() && p.size() == 2) {  // [left, right]
    g.pad_left = p[0].get<int>(), g.pad_right = p[1].get<int>();
  } else {
    const Padding resolved = resolve_padding(p, {1, get_int(c.params, "kernel")}, {1, g.dilation});
    g.pad_left = resolved.left, g.pad_right = resolved.right;
  }
  return g;
}

void validate(const Case& c) {
  const json& p = c.params.at("padding");
  if (p.is_array() && p.size() != 2)
    throw ParamError("padding", "a sequence has two sides: an int, [left, right], \"same\" or \"valid\"");
  const Conv1dGeometry g = geometry_of(c);
  if (p == "same" && g.stride != 1) throw ParamError("padding", "\"same\" padding needs stride 1 (as in PyTorch)");
  check_geometry(as_2d(g), {1, get_int(c.params, "length")}, {1, get_int(c.params, "kernel")}, "kernel");
  check_hypotheses(c, get_int(c.params, "kernel"));
}

template <class T> Outcome verify_typed(const Case& c) {
  const std::size_t length = std::size_t(get_int(c.params, "length")), k = std::size_t(get_int(c.params, "kernel"));
  const std::size_t c_in = std::size_t(get_int(c.params, "in_channels")), c_out = std::size_t(get_int(c.params, "out_channels"));
  const Conv1dGeometry g = geometry_of(c);

  const Sequence<T> x = case_tensor<T, 2>(c, "input", {c_in, length});
  const Kernel1d<T> w = case_tensor<T, 3>(c, "conv_weight", {c_out, c_in, k});
  const std::optional<Vector<T>> b = case_bias<T>(c, c_out);

  Theorem1Options options;
  options.heads = get_int(c.params, "heads");
  options.head_dim = get_int(c.params, "head_dim");
  options.alpha = get_number(c.params, "alpha");
  options.dilation = {1, g.dilation};
  options.encoding = Encoding::quadratic_1d;

  // The one place this proof chooses its MHSA engine.
  const MhsaEngine<T> engine = [](const MhsaLayer<T>& layer, const Matrix<T>& tokens, std::size_t h, std::size_t w_) {
    return mhsa_dense(layer, tokens, h, w_);
  };
  const Kernel<T> w2 = as_kernel(w);
  const Theorem1Check<T> check = check_theorem1(as_image(x), w2, b, as_2d(g), options, engine);

  Outcome out = construction_outcome(c, check, w2, options, c.params.at("engine"));
  out.metrics["padding_resolved"] = {g.pad_left, g.pad_right};
  out.metrics["output_shape"] = {check.expected.shape(0), check.expected.shape(2)};
  out.tensors = conv_tensors<T>(x, as_sequence(check.expected), as_sequence(check.actual), w, b);
  return out;
}

const bool registered = register_proof({
    "cordonnier2020.theorem1_1d",
    cordonnier2020("Theorem 1, remark on 1D"),
    "With N_h >= K heads and the relative encoding r_delta = (delta^2, delta) (D_p = 2), a multi-head "
    "self-attention layer on a sequence can express any 1D convolution of kernel size K (with padding, stride and "
    "dilation as in 2D).",
    theorem1_params({
        {"length", ParamKind::integer, nullptr, "sequence length L", 1},
        {"kernel", ParamKind::integer, nullptr, "kernel size K", 1},
        {"in_channels", ParamKind::integer, nullptr, "D_in", 1},
        {"out_channels", ParamKind::integer, nullptr, "D_out", 1},
        {"heads", ParamKind::integer, nullptr, "N_h (>= K for the claim)", 1},
        {"head_dim", ParamKind::integer, nullptr, "D_h (>= out_channels for an exact construction)", 1},
        {"padding", ParamKind::padding, 0, "int, [left, right], \"same\" or \"valid\""},
        {"padding_mode", ParamKind::string, "zeros", "", std::nullopt, false, {"zeros", "reflect", "replicate", "circular"}},
        {"stride", ParamKind::integer, 1, "", 1},
        {"dilation", ParamKind::integer, 1, "", 1},
    }, {"engine", ParamKind::string, "dense", "MHSA engine", std::nullopt, false, {"dense"}}),
    validate,
    [](const Case& c) { return with_dtype(c, [&](auto tag) { return verify_typed<decltype(tag)>(c); }); },
    nullptr,
    theorem1_metrics({
        {.name = "padding_resolved", .type = "array", .help = "[left, right]"},
        {.name = "output_shape", .type = "array", .help = "[C_out, L_out]"},
    }),
});

}  // namespace
}  // namespace attnconv
