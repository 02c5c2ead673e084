// Every fast path of the library in one table, in the style of PyTorch's
// OpInfo: its name, where it is exact - the library's own predicate (`applies`,
// the function the library itself decides by), with the same rule in words -,
// how close it must come to the textbook reference (src/reference/) there, and
// the sample generator it is checked on (tests/samples.hpp). Each row is a
// RapidCheck property: where the predicate holds, fast and reference agree;
// where it does not, the fast path refuses the sample (std::invalid_argument).
// A failure shrinks to the smallest failing sample and prints it. A new fast
// path is one more row.
#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <xtensor/xmath.hpp>

#include "acmix/conv_decomposition.hpp"
#include "acmix/equivalent_kernel.hpp"
#include "acmix/pointwise.hpp"
#include "acmix/window_attention_loop.hpp"
#include "local/neighborhood_attention.hpp"
#include "local/window_attention.hpp"
#include "metrics/compare.hpp"
#include "mhsa/dense_engine.hpp"
#include "mhsa/engine.hpp"
#include "mhsa/separable_engine.hpp"
#include "ops/conv1d_blocked.hpp"
#include "ops/conv2d_blocked.hpp"
#include "ops/conv2d_gemm.hpp"
#include "property.hpp"
#include "reference/conv.hpp"
#include "reference/neighborhood_attention.hpp"
#include "reference/masked_attention.hpp"
#include "reference/mhsa.hpp"
#include "reference/window_rules.hpp"
#include "samples.hpp"

namespace {

using namespace attnconv;
using samples::AcmixSample;
using samples::ConvSample;
using samples::NeighborhoodSample;
using samples::SwinSample;

using Values = xt::xarray<double>;  // an output, compared in double (compare() accumulates in double anyway)

template <class E> Values values(const E& e) { return xt::cast<double>(e); }

// One row, on samples of type Sample.
template <class Sample> struct Row {
  std::string name;
  std::string exact_for;  // the predicate in words
  double tolerance;       // max |fast - reference| <= tolerance * max |reference|; 0: bit for bit
  std::function<Sample()> draw;                     // with RapidCheck, inside the property
  std::function<bool(const Sample&)> applies;       // the library's predicate
  std::function<Values(const Sample&)> fast, reference;
  std::function<void(Sample&, double)> perturb;     // nudges one input of the fast path by the amount given
};

// A row with its sample type erased: `check(perturbation, applied)` draws one
// sample and asserts; the fast path runs on the sample perturbed by
// `perturbation` (0: as drawn), and `applied` counts the samples it applies to.
struct FastPath {
  std::string name, exact_for;
  double tolerance;
  std::function<void(double perturbation, int& applied)> check;
};

template <class Sample> FastPath fast_path(Row<Sample> row) {
  const std::string name = row.name, exact_for = row.exact_for;
  const double tolerance = row.tolerance;
  return {name, exact_for, tolerance, [row = std::move(row)](double perturbation, int& applied) {
            const Sample sample = row.draw();
            Sample input = sample;
            if (perturbation != 0) row.perturb(input, perturbation);
            if (!row.applies(sample)) {
              RC_LOG() << row.name << " refuses " << sample.description << "\n";
              RC_ASSERT_THROWS_AS(row.fast(input), std::invalid_argument);
              return;
            }
            ++applied;
            const Values reference = row.reference(sample);
            const Difference difference = compare(row.fast(input), reference);
            const double scale = xt::amax(xt::abs(reference))();
            RC_LOG() << row.name << " on " << sample.description << ": max_abs " << difference.max_abs
                     << ", max |reference| " << scale << "\n";
            RC_ASSERT(difference.max_abs <= row.tolerance * scale);  // NaN fails
          }};
}

// A fast path the library runs on every sample of its generator.
constexpr auto everywhere = [](const auto&) { return true; };

// ---- Convolutions: reference::conv2d and reference::conv1d ----

template <class T> Values conv2d_reference(const ConvSample<T>& s) {
  return values(reference::conv2d(s.x, s.weight, s.bias, s.geometry));
}

template <class T> void perturb_conv(ConvSample<T>& s, double by) { s.weight(0, 0, 0, 0) += T(by); }

// Half of the samples of the shifted form have stride 1 (the others mostly not: refused).
template <class T> ConvSample<T> unit_stride_half() {
  auto s = samples::conv_sample<T>();
  if (*rc::gen::arbitrary<bool>()) s.geometry.stride = {1, 1}, s.description += " (stride set to 1)";
  return s;
}

template <class T, ConvGemmForm form> bool gemm_accepts(const ConvSample<T>& s) {
  return conv2d_gemm_accepts(form, s.geometry);
}

template <class T, ConvGemmForm form> Values gemm(const ConvSample<T>& s) {
  return values(conv2d_gemm(s.x, s.weight, s.bias, s.geometry, form));
}

// A sequence is the first image row of a 2D sample with a 1-tall kernel.
struct Conv1dSample {
  Sequence<double> x;
  Kernel1d<double> weight;
  std::optional<Vector<double>> bias;
  Conv1dGeometry geometry;
  std::string description;
};

Conv1dSample conv1d_sample() {
  const auto s = samples::conv_sample<double>();
  Conv1dGeometry g;
  g.pad_left = s.geometry.padding.left, g.pad_right = s.geometry.padding.right;
  g.padding_mode = s.geometry.padding_mode, g.stride = s.geometry.stride[1], g.dilation = s.geometry.dilation[1];
  g.groups = s.geometry.groups;
  return {xt::view(s.x, xt::all(), 0, xt::all()), xt::view(s.weight, xt::all(), xt::all(), 0, xt::all()), s.bias, g,
          s.description};
}

// pointwise_conv (ACmix's Stage I, one product per group) is the 1x1 convolution
// with groups: the first tap of a 2D sample, stride, padding and dilation dropped.
ConvSample<double> pointwise_sample() {
  auto s = samples::conv_sample<double>();
  s.weight = xt::view(s.weight, xt::all(), xt::all(), xt::range(0, 1), xt::range(0, 1));
  const int groups = s.geometry.groups;
  s.geometry = ConvGeometry{};
  s.geometry.groups = groups;
  s.description += " (as a 1x1 convolution: the first tap, no stride, padding or dilation)";
  return s;
}

// ---- MHSA: reference::mhsa ----

using MhsaSample = samples::LayerSample;

// Half of the layers positional only (W_qry = 0, u = 0, no delta1*delta2 term), half with every term.
MhsaSample mhsa_sample() { return samples::layer_sample(*rc::gen::arbitrary<bool>()); }

Values mhsa_reference(const MhsaSample& s) { return values(reference::mhsa(s.layer, s.x, s.height, s.width)); }

void perturb_layer(MhsaSample& s, double by) { s.layer.w_out(0, 0) += by; }

// ---- Local attention: reference::masked_attention with the window as a mask ----

// (heads, H, W, D) as (heads, H*W, D): the reference's tokens.
template <class T> xt::xtensor<T, 3> tokens(const HeadMaps<T>& maps) {
  return xt::reshape_view(maps, {maps.shape(0), maps.shape(1) * maps.shape(2), maps.shape(3)});
}

template <class Sample>
Values local_reference(const Sample& s, const reference::WindowRule& window) {
  const auto& m = s.maps;
  Values out = values(reference::masked_attention(tokens(m.q), tokens(m.k), tokens(m.v), window));
  out.reshape({m.v.shape(0), m.v.shape(1), m.v.shape(2), m.v.shape(3)});
  return out;
}

template <class Sample> void perturb_v(Sample& s, double by) { s.maps.v(0, 0, 0, 0) += by; }

bool neighborhood_applies(const NeighborhoodSample& s) {
  return neighborhood_window_fits(int(s.maps.q.shape(1)), s.kernel, s.dilation) &&
         neighborhood_window_fits(int(s.maps.q.shape(2)), s.kernel, s.dilation);
}

Values neighborhood_reference(const NeighborhoodSample& s) {
  return local_reference(s, reference::neighborhood_window(s.rpb, int(s.maps.q.shape(1)), int(s.maps.q.shape(2)),
                                                           s.kernel, s.dilation));
}

bool swin_applies(const SwinSample& s) {
  return swin_window_fits(int(s.maps.q.shape(1)), int(s.maps.q.shape(2)), s.window, s.shift);
}

Values swin_reference(const SwinSample& s) {
  return local_reference(s, reference::swin_window(s.table, int(s.maps.q.shape(1)), int(s.maps.q.shape(2)), s.window,
                                                   s.shift));
}

// ---- ACmix ----

// The convolution as ACmix decomposes it (1x1 products, then the shifts' sum), by either shift.
FastPath decomposed_row(const char* name, ShiftMethod method) {
  return fast_path(Row<ConvSample<double>>{
      name, "every geometry and groups (round-off: 1x1 products, then the shifts' sum)", 1e-12,
      samples::conv_sample<double>, everywhere,
      [method](const auto& s) {
        OpCounter counter;
        return values(conv2d_decomposed(s.x, s.weight, s.bias, s.geometry, method, counter));
      },
      conv2d_reference<double>, perturb_conv<double>});
}

// Stage I by the textbook convolution: q, k, v = conv{1,2,3}(x), 1x1 with bias.
AcmixStage1<double> stage1_reference(const AcmixSample& s) {
  const auto conv1x1 = [&](const Matrix<double>& w, const Vector<double>& b) {
    const Kernel<double> kernel = xt::reshape_view(w, {w.shape(0), w.shape(1), std::size_t(1), std::size_t(1)});
    return reference::conv2d(s.x, kernel, std::optional<Vector<double>>(b), ConvGeometry{});
  };
  const AcmixWeights<double>& w = s.weights;
  return {conv1x1(w.conv1_weight, w.conv1_bias), conv1x1(w.conv2_weight, w.conv2_bias),
          conv1x1(w.conv3_weight, w.conv3_bias)};
}

bool acmix_applies(const AcmixSample& s) {
  return acmix_window_fits(s.config, int(s.x.shape(1)), int(s.x.shape(2)));
}

// The attention path as masked attention (docs/design.md, "ACmix module"): per head
// n, q_i = q[n hd + d] hd^-1/2 at output pixel i's query pixel, k_j, v_j = k, v[n hd + d]
// at pixel j, bias q_i . (pe_query - pe_key), pe[d, i, j] = b_p[d] + W_p[d, 0] x_j + W_p[d, 1] y_i
// with x_j = -1 + 2 j / (W - 1), y_i = -1 + 2 i / (H - 1) (-1 on a side of 1).
Values acmix_attention_reference(const AcmixSample& s) {
  const AcmixConfig& c = s.config;
  const AcmixStage1<double> s1 = stage1_reference(s);
  const std::size_t heads = std::size_t(c.heads), hd = std::size_t(c.head_dim());
  const std::size_t height = s.x.shape(1), width = s.x.shape(2), stride = std::size_t(c.stride);
  const std::size_t h_out = std::size_t(c.output_size(int(height))), w_out = std::size_t(c.output_size(int(width)));
  const auto coordinate = [](std::size_t i, std::size_t n) { return n == 1 ? -1.0 : -1.0 + 2.0 * double(i) / double(n - 1); };
  Image<double> pe({hd, height, width});
  for (std::size_t d = 0; d < hd; ++d)
    for (std::size_t i = 0; i < height; ++i)
      for (std::size_t j = 0; j < width; ++j)
        pe(d, i, j) = s.weights.conv_p_bias(d) + s.weights.conv_p_weight(d, 0) * coordinate(j, width) +
                      s.weights.conv_p_weight(d, 1) * coordinate(i, height);
  xt::xtensor<double, 3> q({heads, h_out * w_out, hd}), k({heads, height * width, hd}), v({heads, height * width, hd});
  for (std::size_t n = 0; n < heads; ++n)
    for (std::size_t d = 0; d < hd; ++d) {
      for (std::size_t i = 0; i < h_out * w_out; ++i)
        q(n, i, d) = s1.q(n * hd + d, i / w_out * stride, i % w_out * stride) / std::sqrt(double(hd));
      for (std::size_t j = 0; j < height * width; ++j)
        k(n, j, d) = s1.k(n * hd + d, j / width, j % width), v(n, j, d) = s1.v(n * hd + d, j / width, j % width);
    }
  const xt::xtensor<reference::Real, 3> out =
      reference::masked_attention(q, k, v, reference::acmix_window(q, pe, c.kernel_att, c.stride));
  Image<double> y({heads * hd, h_out, w_out});  // channel n hd + d
  for (std::size_t n = 0; n < heads; ++n)
    for (std::size_t d = 0; d < hd; ++d)
      for (std::size_t i = 0; i < h_out * w_out; ++i) y(n * hd + d, i / w_out, i % w_out) = double(out(n, i, d));
  return y;
}

// The convolution path is one k_conv x k_conv convolution of [x; 1] with the derived kernel.
Values acmix_conv_reference(const AcmixSample& s) {
  const EquivalentConv<double> eq = conv_path_equivalent(s.config, s.weights);
  return values(reference::conv2d(append_ones_channel(s.x), eq.weight, std::optional<Vector<double>>(eq.bias),
                                  eq.geometry));
}

void perturb_dep_conv(AcmixSample& s, double by) {
  const std::size_t centre = std::size_t(s.config.kernel_conv / 2);
  s.weights.dep_conv_weight(0, 0, centre, centre) += by;
}

void perturb_value_bias(AcmixSample& s, double by) { s.weights.conv3_bias(0) += by; }

const FastPath fast_paths[] = {
    // src/local/: NATTEN's current window rule (per-axis and even windows, stride, causal,
    // dilation) against its textbook mask loop (reference/neighborhood_attention.hpp).
    fast_path(Row<samples::NattenSample>{
        "neighborhood_attention (NATTEN's parameters)",
        "every window, stride, dilation and causal flag, with or without rpb (the generator draws only these)",
        1e-12, samples::natten_sample, everywhere,
        [](const auto& s) { return values(neighborhood_attention(s.q, s.k, s.v, s.rpb, s.axes)); },
        [](const auto& s) { return values(reference::neighborhood_attention(s.q, s.k, s.v, s.rpb, s.axes)); },
        [](auto& s, double by) { s.v(0, 0, 0, 0) += by; }}),
    // src/ops/: convolutions.
    fast_path(Row<ConvSample<double>>{
        "conv2d_blocked float64", "every geometry and groups", 0, samples::conv_sample<double>, everywhere,
        [](const auto& s) { return values(conv2d_blocked(s.x, s.weight, s.bias, s.geometry)); },
        conv2d_reference<double>, perturb_conv<double>}),
    fast_path(Row<ConvSample<float>>{
        "conv2d_blocked float32", "every geometry and groups", 0, samples::conv_sample<float>, everywhere,
        [](const auto& s) { return values(conv2d_blocked(s.x, s.weight, s.bias, s.geometry)); },
        conv2d_reference<float>, perturb_conv<float>}),
    fast_path(Row<ConvSample<double>>{
        "conv2d_gemm float64", "every geometry and groups (round-off: BLAS's order of the sum)", 1e-12,
        samples::conv_sample<double>, gemm_accepts<double, ConvGemmForm::automatic>,
        gemm<double, ConvGemmForm::automatic>, conv2d_reference<double>, perturb_conv<double>}),
    fast_path(Row<ConvSample<float>>{
        "conv2d_gemm float32", "every geometry and groups (round-off: BLAS's order of the sum)", 1e-5,
        samples::conv_sample<float>, gemm_accepts<float, ConvGemmForm::automatic>,
        gemm<float, ConvGemmForm::automatic>, conv2d_reference<float>, perturb_conv<float>}),
    fast_path(Row<ConvSample<double>>{
        "conv2d_gemm shifted float64", "stride 1, every other geometry and groups (conv2d_gemm_accepts)", 1e-12,
        unit_stride_half<double>, gemm_accepts<double, ConvGemmForm::shifted>, gemm<double, ConvGemmForm::shifted>,
        conv2d_reference<double>, perturb_conv<double>}),
    fast_path(Row<ConvSample<float>>{
        "conv2d_gemm shifted float32", "stride 1, every other geometry and groups (conv2d_gemm_accepts)", 1e-5,
        unit_stride_half<float>, gemm_accepts<float, ConvGemmForm::shifted>, gemm<float, ConvGemmForm::shifted>,
        conv2d_reference<float>, perturb_conv<float>}),
    fast_path(Row<ConvSample<double>>{
        "conv2d_gemm im2col float64", "every geometry and groups (conv2d_gemm_accepts)", 1e-12,
        samples::conv_sample<double>, gemm_accepts<double, ConvGemmForm::im2col>, gemm<double, ConvGemmForm::im2col>,
        conv2d_reference<double>, perturb_conv<double>}),
    fast_path(Row<Conv1dSample>{
        "conv1d_blocked float64", "every geometry and groups", 0, conv1d_sample, everywhere,
        [](const auto& s) { return values(conv1d_blocked(s.x, s.weight, s.bias, s.geometry)); },
        [](const auto& s) { return values(reference::conv1d(s.x, s.weight, s.bias, s.geometry)); },
        [](Conv1dSample& s, double by) { s.weight(0, 0, 0) += by; }}),
    // src/mhsa/: the Eq. 8 layer.
    fast_path(Row<MhsaSample>{
        "mhsa_dense", "every layer", 1e-12, mhsa_sample, everywhere,
        [](const auto& s) { return values(mhsa_dense(s.layer, s.x, s.height, s.width)); }, mhsa_reference,
        perturb_layer}),
    fast_path(Row<MhsaSample>{
        "mhsa_separable", "layers without content terms whose score splits, no delta1*delta2 term (separable_exact)",
        1e-12, mhsa_sample, [](const auto& s) { return separable_exact(s.layer); },
        [](const auto& s) { return values(mhsa_separable(s.layer, s.x, s.height, s.width)); }, mhsa_reference,
        perturb_layer}),
    fast_path(Row<MhsaSample>{
        "run_mhsa auto", "every layer (separable where separable_exact, dense otherwise)", 1e-12, mhsa_sample,
        everywhere, [](const auto& s) { return values(run_mhsa(Engine::auto_, s.layer, s.x, s.height, s.width).y); },
        mhsa_reference, perturb_layer}),
    // src/local/: neighborhood and Swin window attention against every key with the window as a mask.
    fast_path(Row<NeighborhoodSample>{
        "neighborhood_attention", "an odd window, sides of at least K d (neighborhood_window_fits)", 1e-12,
        samples::neighborhood_sample, neighborhood_applies,
        [](const auto& s) {
          return values(neighborhood_attention(s.maps.q, s.maps.k, s.maps.v, s.rpb, s.kernel, s.dilation));
        },
        neighborhood_reference, perturb_v<NeighborhoodSample>}),
    fast_path(Row<SwinSample>{
        "swin_window_attention", "sides multiples of the window, shift in [0, M) (swin_window_fits)", 1e-12,
        samples::swin_sample, swin_applies,
        [](const auto& s) {
          return values(swin_window_attention(s.maps.q, s.maps.k, s.maps.v, s.table, s.window, s.shift));
        },
        swin_reference, perturb_v<SwinSample>}),
    fast_path(Row<SwinSample>{
        "locally_connected(swin_attention_weights)", "as swin_window_attention (swin_window_fits)", 1e-12,
        samples::swin_sample, swin_applies,
        [](const auto& s) {
          return values(locally_connected(swin_attention_weights(s.maps.q, s.maps.k, s.table, s.window, s.shift),
                                          s.maps.v));
        },
        swin_reference, perturb_v<SwinSample>}),
    // src/acmix/: the decomposition, Stage I and the module's two paths.
    decomposed_row("conv2d_decomposed tensor_shift", ShiftMethod::tensor_shift),
    decomposed_row("conv2d_decomposed fused", ShiftMethod::fused),
    decomposed_row("conv2d_decomposed depthwise", ShiftMethod::depthwise),
    fast_path(Row<ConvSample<double>>{
        "pointwise_conv", "every 1x1 convolution with groups (round-off: BLAS's order of the sum)", 1e-12,
        pointwise_sample, everywhere,
        [](const auto& s) {
          OpCounter counter;
          const Matrix<double> w = xt::view(s.weight, xt::all(), xt::all(), 0, 0);
          return values(pointwise_conv(s.x, w, s.bias, counter, "pointwise", s.geometry.groups));
        },
        conv2d_reference<double>, perturb_conv<double>}),
    fast_path(Row<AcmixSample>{
        "acmix_attention_path", "heads dividing C_out, k_att / 2 smaller than each side (acmix_window_fits)", 1e-12,
        samples::acmix_sample, acmix_applies,
        [](const auto& s) {
          OpCounter counter;
          return values(acmix_attention_path(s.config, s.weights, stage1_reference(s), counter));
        },
        acmix_attention_reference, perturb_value_bias}),
    fast_path(Row<AcmixSample>{
        "window_attention_loop", "as acmix_attention_path (acmix_window_fits)", 1e-12, samples::acmix_sample,
        acmix_applies, [](const auto& s) { return values(window_attention_loop(s.config, s.weights, s.x)); },
        acmix_attention_reference, perturb_value_bias}),
    fast_path(Row<AcmixSample>{
        "acmix_conv_path", "every module (against its derived kernel on [x; 1], conv_path_equivalent)", 1e-12,
        samples::acmix_sample, everywhere,
        [](const auto& s) {
          OpCounter counter;
          return values(acmix_conv_path(s.config, s.weights, stage1_reference(s), counter));
        },
        acmix_conv_reference, perturb_dep_conv}),
};

// Every row is checked on this many samples, and must apply to at least a quarter of them.
constexpr int samples_per_row = 300;

}  // namespace

TEST_CASE("every fast path equals its textbook reference where the library says it applies, and refuses the rest",
          "[fast_paths]") {
  for (const FastPath& path : fast_paths) {
    INFO(path.name << ", exact for " << path.exact_for << ", tolerance " << path.tolerance);
    int applied = 0;
    property::check(path.name, samples_per_row, [&] { path.check(0, applied); });
    CHECK(applied >= samples_per_row / 4);
  }
}

TEST_CASE("the fast-path table fails every fast path whose input is perturbed", "[fast_paths]") {
  // Each row can fail: its fast path run on a sample with one input nudged by
  // 1000 tolerances (at least 1e-6, which float32 inputs keep) is refused.
  for (const FastPath& path : fast_paths) {
    INFO(path.name);
    int applied = 0;
    const double perturbation = std::max(1e3 * path.tolerance, 1e-6);
    const auto result = property::run(
        path.name + " perturbed", 30, [&] { path.check(perturbation, applied); }, /*expect_failure=*/true);
    CHECK(result.is<rc::detail::FailureResult>());
  }
}

TEST_CASE("the library decides by the predicates the table reads", "[fast_paths]") {
  // conv2d_gemm's automatic form is the one conv2d_gemm_form names, bit for bit.
  property::check("conv2d_gemm automatic form", 100, [] {
    const auto s = samples::conv_sample<double>();
    const ConvGemmForm form =
        conv2d_gemm_form(ConvGemmForm::automatic, s.geometry, int(s.x.shape(2)), int(s.weight.shape(3)));
    RC_ASSERT(form != ConvGemmForm::automatic);
    RC_ASSERT(conv2d_gemm(s.x, s.weight, s.bias, s.geometry) == conv2d_gemm(s.x, s.weight, s.bias, s.geometry, form));
  });
  // run_mhsa's auto_ runs the separable engine exactly where separable_exact holds.
  property::check("run_mhsa auto engine", 100, [] {
    const MhsaSample s = mhsa_sample();
    const Engine ran = run_mhsa(Engine::auto_, s.layer, s.x, s.height, s.width).ran;
    RC_ASSERT(ran == (separable_exact(s.layer) ? Engine::separable : Engine::dense));
  });
}
