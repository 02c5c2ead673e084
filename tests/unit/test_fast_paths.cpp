// Every fast path of the library in one table, in the style of PyTorch's
// OpInfo: its name, the inputs on which it is exact, how close it must come to
// the textbook reference (src/reference/) there, and the sample generator it
// is checked on (tests/samples.hpp). Each row is a RapidCheck property: a
// failure shrinks to the smallest failing sample and prints it. A new fast path
// is one more row.
#include <functional>
#include <string>
#include <xtensor/xmath.hpp>

#include "metrics/compare.hpp"
#include "mhsa/dense_engine.hpp"
#include "mhsa/engine.hpp"
#include "mhsa/separable_engine.hpp"
#include "ops/conv1d_blocked.hpp"
#include "ops/conv2d_blocked.hpp"
#include "ops/conv2d_gemm.hpp"
#include "property.hpp"
#include "reference/conv.hpp"
#include "reference/mhsa.hpp"
#include "reference/neighborhood_attention.hpp"
#include "local/neighborhood_attention.hpp"
#include "samples.hpp"

namespace {

using namespace attnconv;

// The fast path and the reference on one sample.
struct SampleRun {
  Difference difference;    // fast against reference
  double reference_scale;   // max |reference|
  std::string description;  // the sample
};

struct FastPath {
  std::string name;
  std::string exact_for;  // the samples drawn: where it must equal the reference
  double tolerance;       // max |fast - reference| <= tolerance * max |reference|; 0: bit for bit
  std::function<SampleRun()> run;  // draws a sample (with RapidCheck) and runs both
};

template <class A, class B> SampleRun sample_run(const A& fast, const B& reference, std::string description) {
  return {compare(fast, reference), double(xt::amax(xt::abs(reference))()), std::move(description)};
}

template <class T> SampleRun conv2d_row() {
  const auto s = samples::conv_sample<T>();
  return sample_run(conv2d_blocked(s.x, s.weight, s.bias, s.geometry),
                    reference::conv2d(s.x, s.weight, s.bias, s.geometry), s.description);
}

// The form conv2d_gemm picks (automatic), or one forced; the shifted form takes stride 1 only.
template <class T, ConvGemmForm form = ConvGemmForm::automatic> SampleRun conv2d_gemm_row() {
  auto s = samples::conv_sample<T>();
  if (form == ConvGemmForm::shifted) s.geometry.stride = {1, 1}, s.description += " (stride set to 1)";
  return sample_run(conv2d_gemm(s.x, s.weight, s.bias, s.geometry, form),
                    reference::conv2d(s.x, s.weight, s.bias, s.geometry), s.description);
}

// A sequence is the first image row of a 2D sample with a 1-tall kernel.
template <class T> SampleRun conv1d_row() {
  auto s = samples::conv_sample<T>();
  const Sequence<T> x = xt::view(s.x, xt::all(), 0, xt::all());
  const Kernel1d<T> w = xt::view(s.weight, xt::all(), xt::all(), 0, xt::all());
  Conv1dGeometry g;
  g.pad_left = s.geometry.padding.left, g.pad_right = s.geometry.padding.right;
  g.padding_mode = s.geometry.padding_mode, g.stride = s.geometry.stride[1], g.dilation = s.geometry.dilation[1];
  g.groups = s.geometry.groups;
  return sample_run(conv1d_blocked(x, w, s.bias, g), reference::conv1d(x, w, s.bias, g), s.description);
}

SampleRun mhsa_row(bool positional_only, const std::function<Matrix<double>(const samples::LayerSample&)>& fast) {
  const auto s = samples::layer_sample(positional_only);
  return sample_run(fast(s), reference::mhsa(s.layer, s.x, s.height, s.width), s.description);
}

const FastPath fast_paths[] = {
    {"conv2d_blocked float64", "every geometry and groups", 0, conv2d_row<double>},
    {"conv2d_blocked float32", "every geometry and groups", 0, conv2d_row<float>},
    {"conv2d_gemm float64", "every geometry and groups (round-off: BLAS's order of the sum)", 1e-12, conv2d_gemm_row<double>},
    {"conv2d_gemm float32", "every geometry and groups (round-off: BLAS's order of the sum)", 1e-5, conv2d_gemm_row<float>},
    {"conv2d_gemm shifted float64", "stride 1, every other geometry and groups", 1e-12,
     conv2d_gemm_row<double, ConvGemmForm::shifted>},
    {"conv2d_gemm shifted float32", "stride 1, every other geometry and groups", 1e-5,
     conv2d_gemm_row<float, ConvGemmForm::shifted>},
    {"conv2d_gemm im2col float64", "every geometry and groups", 1e-12, conv2d_gemm_row<double, ConvGemmForm::im2col>},
    {"conv1d_blocked float64", "every geometry and groups", 0, conv1d_row<double>},
    {"mhsa_dense", "every layer", 1e-12,
     [] { return mhsa_row(false, [](const auto& s) { return mhsa_dense(s.layer, s.x, s.height, s.width); }); }},
    {"mhsa_separable", "layers without content terms whose score splits (no delta1*delta2 term)", 1e-12,
     [] { return mhsa_row(true, [](const auto& s) { return mhsa_separable(s.layer, s.x, s.height, s.width); }); }},
    {"run_mhsa auto", "every layer (separable where exact, dense otherwise)", 1e-12, [] {
       const bool positional_only = *rc::gen::arbitrary<bool>();
       return mhsa_row(positional_only,
                       [](const auto& s) { return run_mhsa(Engine::auto_, s.layer, s.x, s.height, s.width).y; });
     }},
    {"neighborhood_attention (src/local/)", "every window, stride, dilation and causal flag, with or without rpb", 1e-12,
     [] {
       const auto s = samples::neighborhood_sample();
       return sample_run(neighborhood_attention(s.q, s.k, s.v, s.rpb, s.axes),
                         reference::neighborhood_attention(s.q, s.k, s.v, s.rpb, s.axes), s.description);
     }},
};

}  // namespace

TEST_CASE("every fast path equals its textbook reference where it is exact", "[fast_paths]") {
  for (const FastPath& path : fast_paths) {
    INFO(path.name << ", exact for " << path.exact_for);
    property::check(path.name, 300, [&path] {
      const SampleRun r = path.run();
      RC_LOG() << path.name << " on " << r.description << ": max_abs " << r.difference.max_abs << ", max |reference| "
               << r.reference_scale << "\n";
      RC_ASSERT(r.difference.max_abs <= path.tolerance * r.reference_scale);  // NaN fails
    });
  }
}

TEST_CASE("the fast-path table fails a fast path that is not exact", "[fast_paths]") {
  // The property can fail: dense with one weight of the layer perturbed by 1e-6
  // is refused (RapidCheck then prints a reproduce line: expected here).
  const auto perturbed = [](const samples::LayerSample& s) {
    MhsaLayer<double> layer = s.layer;
    layer.w_out(0, 0) += 1e-6;
    return mhsa_dense(layer, s.x, s.height, s.width);
  };
  const auto result = property::run("perturbed dense", 20, [&] {
    const SampleRun r = mhsa_row(false, perturbed);
    RC_ASSERT(r.difference.max_abs <= 1e-12 * r.reference_scale);
  });
  CHECK(result.is<rc::detail::FailureResult>());
}
