// Cordonnier, Loukas & Jaggi, ICLR 2020, the remark after Theorem 1 on 1D
// sequences: with N_h = K heads and a relative encoding of dimension D_p = 2,
// r_delta = (delta^2, delta), MHSA on a sequence expresses any 1D convolution
// of kernel K. Checked as Theorem 1 itself on a 1 x L image with a 1 x K kernel
// (the same construction, alignment and bound; docs/design.md, "1D remark").
#include "mhsa/dense_engine.hpp"
#include "mhsa/engine.hpp"
#include "ops/conv1d_blocked.hpp"
#include "proof/case_tensors.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"
#include "proof/vacuous.hpp"
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

void check(Theorem1dParams& p, const Case&, const Request& request) {
  p.options.alpha = p.shared.alpha;
  p.options.dilation = {1, p.geometry.dilation};
  p.options.encoding = Encoding::quadratic_1d;
  check_hypotheses(request, int(p.kernel), p.options, int(p.in_channels), int(p.out_channels));
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

// Bytes at the peak: Theorem 1's check (theorem1_common.hpp, dense engine) on the 1 x L image.
double memory_estimate(const Case&, const Theorem1dParams& p) {
  const ConvShape shape{.image = {1, int(p.length)}, .kernel = {1, int(p.kernel)}, .in_channels = p.in_channels,
                        .out_channels = p.out_channels, .groups = p.geometry.groups};
  return theorem1_memory(shape, as_2d(p.geometry), p.options, p.dtype, Engine::dense);
}

template <class T> Outcome verify(const Case& c, const Theorem1dParams& p, const Request& request) {
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

  Outcome out = construction_outcome(request, check, p.options, to_string(Engine::dense));
  vacuous_if_zero(out, "the input", x, "the bias");
  vacuous_if_zero(out, "conv_weight (the convolution, and so the layer's values)", w, "the bias");
  out.set(metric::padding_resolved, {p.geometry.pad_left, p.geometry.pad_right});
  out.set(metric::output_shape, {check.expected.shape(0), check.expected.shape(2)});
  out.tensors = conv_tensors<T>(x, as_sequence(check.expected), as_sequence(check.actual), w, b);
  for (auto& t : mhsa_layer_tensors(check.layer)) out.tensors.push_back(std::move(t));
  return out;
}

using P = Theorem1dParams;
const bool registered = register_proof(make_proof<P>({
    .id = "cordonnier2020.theorem1_1d",
    .paper = cordonnier2020("Theorem 1, remark on 1D"),
    .statement =
        "With N_h >= K heads and the relative encoding r_delta = (delta^2, delta) (D_p = 2), a multi-head "
        "self-attention layer on a sequence can express any 1D convolution of kernel size K (with padding, stride and "
        "dilation as in 2D).",
    .params = {field(&P::length, size_param("length", "sequence length L")),
               field(&P::kernel, size_param("kernel", "kernel size K")),
               field(&P::in_channels, size_param("in_channels", "D_in")),
               field(&P::out_channels, size_param("out_channels", "D_out")),
               field(&P::options, &Theorem1Options::heads,
                     {.name = "heads", .help = "N_h (>= K for the claim)", .minimum = 1}),
               field(&P::options, &Theorem1Options::head_dim,
                     {.name = "head_dim",
                      .help = "D_h (>= min(in_channels, out_channels) for an exact construction)",
                      .minimum = 1}),
               nested(&P::geometry, conv1d_geometry()), nested(&P::shared, theorem1_shared()),
               field(&P::dtype, dtype_param())},
    .retired = {{"engine", "dense"}},
    .tensors = theorem1_tensor_names(),
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = theorem1_metrics(
        {metric::padding_resolved.described("[left, right]"), metric::output_shape.described("[C_out, L_out]")}),
    .dumps = mhsa_layer_dumps("(delta^2, delta) on the 1 x L image (quadratic_1d)", {{"input", "(C_in, L)"},
               {"conv_weight", "(C_out, C_in / groups, K)"},
               {"conv_bias", "(C_out); zeros without bias"},
               {"expected", "the convolution, (C_out, L_out)"},
               {"actual", "the MHSA, aligned to the convolution's output"}}),
    .memory_estimate = memory_estimate,
    .expected_tensors = expected_tensors,
}));

}  // namespace
}  // namespace attnconv
