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
#include "io/sizes.hpp"
#include "proof/short_number.hpp"
#include "mhsa/attention_row.hpp"
#include "mhsa/engine.hpp"
#include "ops/dense_kernel.hpp"
#include "proof/case_tensors.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"
#include "proof/vacuous.hpp"
#include "theorem1_common.hpp"

namespace attnconv {
namespace metric {
namespace {
const Metric flops{.name = "flops",
                   .help = "floating-point operations of the MHSA engine that ran (dense_flops / separable_flops)"};
const Metric flops_skipped{.name = "flops_skipped",
                           .help = "of flops, the P V products skipped because P was exactly 0 (dense)"};
const Metric memory_estimate_bytes{.name = "memory_estimate_bytes",
                                   .help = "the proof's memory_estimate for this case (bytes at peak)"};
}  // namespace
}  // namespace metric

namespace {

// A 2D Theorem 1 case, its encoding and the engine that runs the MHSA.
struct Theorem1Params : Theorem1Case2d {
  Engine engine = Engine::auto_;
};

void check(Theorem1Params& p, const Case& c, const Request& request) {
  check_theorem1_2d(p, c, request);
  if (p.options.encoding == Encoding::quadratic_general)
    p.options.precision = random_precisions(p.shared.seed, p.options.heads);
}

double memory_estimate(const Case&, const Theorem1Params& p) {
  // The Theorem 1 layer has no content terms: auto runs the separable engine.
  const Engine engine = p.engine == Engine::dense ? Engine::dense : Engine::separable;
  return theorem1_memory(p.shape, p.geometry, p.options, p.dtype, engine);
}

template <class T> Outcome verify(const Case& c, const Theorem1Params& p, const Request& request) {
  const CaseTensors tensors(c, p.shared.seed);
  const Image<T> x = tensors.get<T, 3>("input", p.shape.input());
  const Kernel<T> w = tensors.get<T, 4>("conv_weight", p.shape.weight());
  const std::optional<Vector<T>> b = tensors.conv_bias<T>(p.shared.bias, p.shape.out_channels);

  // The one place this proof chooses its MHSA engine (mhsa/engine.hpp: auto runs
  // the exact separable engine on this layer, which has no content terms),
  // attending only at the queries the (strided) output keeps.
  EngineResult<T> ran{};
  const MhsaGridEngine<T> engine = [&](const MhsaLayer<T>& layer, const Matrix<T>& tokens, std::size_t h,
                                       std::size_t w_, const QueryGrid& queries) {
    ran = run_mhsa(p.engine, layer, tokens, h, w_, queries);
    return ran.y;
  };
  const Theorem1Check<T> check = check_theorem1(x, w, b, p.geometry, p.options, engine);

  Outcome out = construction_outcome(request, check, p.options, to_string(ran.ran));
  vacuous_if_zero(out, "the input", x, "the bias");
  vacuous_if_zero(out, "conv_weight (the convolution, and so the layer's values)", w, "the bias");
  out.set(metric::flops, ran.flops);
  out.set(metric::flops_skipped, ran.flops_skipped);
  out.set(metric::memory_estimate_bytes, memory_estimate(c, p));
  const Padding& pad = p.geometry.padding;
  out.set(metric::padding_resolved, {pad.top, pad.bottom, pad.left, pad.right});
  out.set(metric::output_shape, {check.expected.shape(0), check.expected.shape(1), check.expected.shape(2)});
  out.tensors = conv_tensors<T>(x, check.expected, check.actual, w, b);
  for (auto& t : mhsa_layer_tensors(check.layer)) out.tensors.push_back(std::move(t));
  return out;
}

// The attention probabilities of each head of the layer this proof checks,
// for one query: the centre output pixel, at its padded coordinates
// (i s1 + c1 d1, j s2 + c2 d2). Under the construction W_qry = W_key = 0 and
// u = 0, so they depend on positions only; the weights are the case's own.
template <class T> FigureData attention_figure(const Case& c, const Theorem1Params& p) {
  const ConvGeometry& g = p.geometry;
  const auto& image = p.shape.image;
  const auto& kernel = p.shape.kernel;
  // The padded image, its tokens and one attention row per head, before allocating any of them.
  const double padded_pixels = (double(image[0]) + g.padding.top + g.padding.bottom) *
                               (double(image[1]) + g.padding.left + g.padding.right);
  const double bytes = padded_pixels * double(3 * p.shape.in_channels + std::size_t(p.options.heads)) * sizeof(T);
  if (bytes > default_max_memory())
    throw std::runtime_error("its padded image of " + short_number(padded_pixels) + " pixels needs " +
                             format_bytes(bytes) + ", more than half the physical memory");

  const CaseTensors tensors(c, p.shared.seed);
  const Image<T> x = tensors.get<T, 3>("input", p.shape.input());
  const Kernel<T> w = tensors.get<T, 4>("conv_weight", p.shape.weight());
  const MhsaLayer<T> layer = theorem1_layer<T>(dense_kernel(w, g.groups), std::nullopt, p.options);

  const Image<T> xpad = pad(x, g.padding, g.padding_mode);
  const std::size_t hp = xpad.shape(1), wp = xpad.shape(2);
  const int h_out = conv_output_size(image[0], g.padding.top, g.padding.bottom, kernel[0], g.stride[0], g.dilation[0]);
  const int w_out = conv_output_size(image[1], g.padding.left, g.padding.right, kernel[1], g.stride[1], g.dilation[1]);
  const auto centre = kernel_center(kernel);
  const int qi = (h_out / 2) * g.stride[0] + centre[0] * g.dilation[0];
  const int qj = (w_out / 2) * g.stride[1] + centre[1] * g.dilation[1];
  const Matrix<T> probabilities = attention_rows(layer, image_to_tokens(xpad), hp, wp, std::size_t(qi) * wp + std::size_t(qj));

  HeatMapGrid grid;
  grid.layout = kernel;
  const int panels = std::min<int>(kernel[0] * kernel[1], int(layer.heads.size()));
  int reach = 1;  // a window around the query wide enough for every head's target
  for (int h = 0; h < panels; ++h) {
    const auto shift = target_shift(h / kernel[1], h % kernel[1], kernel, g.dilation);  // the head's Delta
    reach = std::max({reach, std::abs(shift[0]), std::abs(shift[1])});
    HeatMap map{.title = "head " + std::to_string(h) + ", Delta (" + std::to_string(shift[0]) + ", " +
                         std::to_string(shift[1]) + ")",
                .values = xt::zeros<double>({hp, wp})};
    for (std::size_t i = 0; i < hp; ++i)
      for (std::size_t j = 0; j < wp; ++j) map.values(i, j) = double(probabilities(std::size_t(h), i * wp + j));
    grid.panels.push_back(std::move(map));
  }
  reach += 2;
  const int silent = int(layer.heads.size()) - panels;
  const std::string title =
      c.name + ": attention probabilities of each head (alpha = " + short_number(p.options.alpha) + ", " +
      to_string(p.options.encoding) + ")\nquery pixel (" + std::to_string(qi) + ", " + std::to_string(qj) +
      ") of the padded " + std::to_string(hp) + "x" + std::to_string(wp) + " image (red box)" +
      (silent > 0 ? "; " + std::to_string(silent) + " silent heads not drawn" : "");
  grid.marker = std::array<int, 2>{qi, qj};
  grid.window = std::array<int, 4>{std::max(0, qi - reach), std::min(int(hp) - 1, qi + reach),
                                   std::max(0, qj - reach), std::min(int(wp) - 1, qj + reach)};
  return {.name = "attention-" + c.name, .title = title, .content = std::move(grid)};
}

std::vector<FigureData> figures(const Case& c, const Theorem1Params& p, const json& /*metrics*/) {
  return {with_dtype(p.dtype, [&](auto tag) { return attention_figure<decltype(tag)>(c, p); })};
}

const bool registered = register_proof(make_proof<Theorem1Params>({
    .id = "cordonnier2020.theorem1",
    .paper = cordonnier2020("Theorem 1"),
    .statement =
        "A multi-head self-attention layer with N_h heads of dimension D_h, output dimension D_out and a relative "
        "positional encoding of dimension D_p >= 3 can express any convolutional layer of kernel size "
        "sqrt(N_h) x sqrt(N_h) and min(D_h, D_out) output channels (with padding, stride and dilation by the paper's "
        "remarks).",
    .params = fields<Theorem1Params>(
        theorem1_2d_params(),
        field(&Theorem1Case2d::options, &Theorem1Options::encoding,
              {.name = "encoding",
               .help = "\"quadratic\": r = (|delta|^2, delta1, delta2), D_p = 3 (the theorem); \"quadratic_general\": "
                       "r = (delta1^2, delta2^2, delta1 delta2, delta1, delta2), D_p = 5, precision alpha*A per head "
                       "with a seeded random SPD A of unit smallest eigenvalue",
               .default_value = Encoding::quadratic,
               .named = by_name({Encoding::quadratic, Encoding::quadratic_general})}),
        field(&Theorem1Params::engine,
              {.name = "engine",
               .help = "MHSA engine: dense, separable (exact only without content terms), auto (separable where exact)",
               .default_value = Engine::auto_,
               .named = by_name({Engine::dense, Engine::separable, Engine::auto_})})),
    .tensors = theorem1_tensor_names(),
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = theorem1_metrics({metric::flops, metric::flops_skipped, metric::memory_estimate_bytes,
                                 metric::padding_resolved, metric::output_shape}),
    .dumps = conv_dumps("the convolution, (C_out, H_out, W_out)", "the MHSA, aligned to the convolution's output grid",
                        mhsa_layer_dumps("(|delta|^2, delta1, delta2) (quadratic) or (delta1^2, delta2^2, delta1 delta2, delta1, delta2) (quadratic_general), as metrics.encoding says")),
    .memory_estimate = memory_estimate,
    .expected_tensors = theorem1_2d_tensors,
    .figures = figures,
}));

}  // namespace
}  // namespace attnconv
