// attnconv_bench: how fast and how lean the Theorem 1 check is.
//
//   cmake --build build --target attnconv_bench && ./build/attnconv_bench
//
// For each configuration (image side, heads = K^2, channels in = out, engine):
//   case_s       wall time of the whole check (blocked convolution, construction,
//                MHSA, alignment, bound, comparison), as `attnconv run` does it
//   mhsa_s       wall time of the MHSA forward alone
//   GFLOPs       the MHSA's floating-point operations (dense_flops / separable_flops,
//                nothing skipped counted as skipped) per second of mhsa_s
//   dgemm_GFLOPs the machine's own dgemm rate, measured in the same run (2048^3,
//                same threads as the engines); ratio = GFLOPs / dgemm_GFLOPs
//   peak_MiB     peak RSS (getrusage ru_maxrss) of a child process that ran the
//                case once; estimate_MiB the proof's memory_estimate
// The dense engine skips weights that are exactly 0, so at alpha = 60 its rate
// counts operations it did not have to do: see skipped_pct. The dense_content
// rows (content terms present) count executed work only.
//
// conv/...: the convolution of the check alone (conv2d_gemm, ops/conv2d_gemm.hpp), in the
// form it picks and, side by side, in its im2col form:
//   conv_s, conv_cpu_s      wall and CPU time (all threads) of conv2d_gemm, automatic form
//   im2col_s, im2col_cpu_s  the same forced to the im2col form
//   GFLOPs                  2 H_out W_out K1 K2 C_in/groups C_out per conv_s;
//   ratio                   GFLOPs / dgemm_GFLOPs (the same run's dgemm on the same threads)
//   cpu_ratio               the same per CPU second (conv_cpu_s, and the dgemm's): on a loaded
//                           machine, where wall times also count waiting for a core
//
//   ./build/attnconv_bench --benchmark_filter='^conv/' --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "construction/theorem1.hpp"
#include "cases/case_loader.hpp"
#include "proof/proof.hpp"
#include "parallel/blas_kernel.hpp"
#include "parallel/process_environment.hpp"
#include "parallel/threads.hpp"
#include "mhsa/blas.hpp"
#include "mhsa/engine.hpp"
#include "ops/conv2d_gemm.hpp"
#include "ops/padding.hpp"
#include "tensor/random.hpp"

namespace {

using namespace attnconv;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

double dgemm_rate = 0;      // GFLOP/s, measured once at start
double dgemm_cpu_rate = 0;  // GFLOP per CPU second (all threads), the same measurement

double cpu_seconds() {  // of the whole process, all threads
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

double measure_dgemm_rate() {
  const std::size_t n = 2048;
  const Matrix<double> a = Random(1).uniform_tensor<double, 2>({n, n}), b = Random(2).uniform_tensor<double, 2>({n, n});
  Matrix<double> c({n, n});
  double best = 1e30, best_cpu = 1e30;
  for (int repeat = 0; repeat < 3; ++repeat) {
    const auto start = clock_type::now();
    const double cpu_start = cpu_seconds();
    product_rows_into(a, b, c, false);  // single-threaded BLAS on each engine thread, like the engines
    best = std::min(best, seconds_since(start));
    best_cpu = std::min(best_cpu, cpu_seconds() - cpu_start);
  }
  dgemm_cpu_rate = 2.0 * n * n * n / best_cpu / 1e9;
  return 2.0 * n * n * n / best / 1e9;
}

// Through the case loader, as `attnconv run` reads a case file: the proof's
// defaults fill every parameter not given here.
Case theorem1_case(int side, int kernel, int channels, const std::string& engine) {
  const json params = {{"image", {side, side}}, {"kernel", {kernel, kernel}}, {"in_channels", channels},
                       {"out_channels", channels}, {"heads", kernel * kernel}, {"head_dim", channels},
                       {"padding", "same"}, {"alpha", 60.0}, {"dtype", "float64"}, {"seed", 1}, {"engine", engine}};
  const json file = {{"cases", {{{"name", "bench"}, {"proof", "cordonnier2020.theorem1"}, {"params", params}}}}};
  return load_case_text(file.dump(), "attnconv_bench").at(0);
}

// Peak RSS in MiB of a child process that runs the case once.
double child_peak_mib(const Case& c) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    find_proof(c.proof)->verify(c);
    _exit(0);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? double(usage.ru_maxrss) / 1024 : -1;
}

void bench_case(benchmark::State& state, int side, int kernel, int channels, std::string engine) {
  const Case c = theorem1_case(side, kernel, channels, engine);
  const ProofDef* proof = find_proof(c.proof);
  // The MHSA alone, on the same layer and padded tokens as the check.
  const std::size_t ch = std::size_t(channels), k = std::size_t(kernel);
  const Random random(1);
  const Kernel<double> w = random.stream(purpose_id("conv_weight")).uniform_tensor<double, 4>({ch, ch, k, k});
  Theorem1Options options;
  options.heads = kernel * kernel, options.head_dim = channels, options.alpha = 60;
  const MhsaLayer<double> layer = theorem1_layer<double>(w, std::nullopt, options);
  const int pad = (kernel - 1) / 2;
  const Image<double> x = random.stream(purpose_id("input")).uniform_tensor<double, 3>({ch, std::size_t(side), std::size_t(side)});
  const Image<double> xpad = attnconv::pad(x, Padding{pad, kernel - 1 - pad, pad, kernel - 1 - pad}, PaddingMode::zeros);
  const Matrix<double> tokens = image_to_tokens(xpad);
  const std::size_t hp = xpad.shape(1), wp = xpad.shape(2);

  double case_s = 1e30, mhsa_s = 1e30, flops = 0, skipped = 0;
  std::string ran;
  for (auto _ : state) {
    auto start = clock_type::now();
    const Outcome outcome = proof->verify(c);
    case_s = std::min(case_s, seconds_since(start));
    benchmark::DoNotOptimize(outcome.metrics);
    start = clock_type::now();
    const EngineResult<double> result = run_mhsa(engine_from_string(engine), layer, tokens, hp, wp);
    mhsa_s = std::min(mhsa_s, seconds_since(start));
    flops = result.flops, skipped = result.flops_skipped, ran = to_string(result.ran);
    state.SetIterationTime(case_s);
  }
  state.counters["case_s"] = case_s;
  state.counters["mhsa_s"] = mhsa_s;
  state.counters["GFLOPs"] = flops / mhsa_s / 1e9;
  state.counters["dgemm_GFLOPs"] = dgemm_rate;
  state.counters["ratio"] = flops / mhsa_s / 1e9 / dgemm_rate;
  state.counters["skipped_pct"] = 100 * skipped / flops;
  state.counters["peak_MiB"] = child_peak_mib(c);
  state.counters["estimate_MiB"] = proof->memory_estimate(c) / (1 << 20);
  state.SetLabel(ran);
}

// One convolution: side x side image, c_in -> c_out channels, K x K, padding (K - 1) / 2 on every
// side, stride, groups; the best of the iterations (wall and CPU separately).
template <class T>
void bench_conv(benchmark::State& state, int side, int c_in, int c_out, int kernel, int stride, int groups) {
  const Random random(1);
  const std::size_t k = std::size_t(kernel);
  const Image<T> x = random.stream(purpose_id("input")).uniform_tensor<T, 3>({std::size_t(c_in), std::size_t(side), std::size_t(side)});
  const Kernel<T> w = random.stream(purpose_id("conv_weight")).uniform_tensor<T, 4>({std::size_t(c_out), std::size_t(c_in / groups), k, k});
  const std::optional<Vector<T>> b = random.stream(purpose_id("conv_bias")).uniform_tensor<T, 1>({std::size_t(c_out)});
  ConvGeometry g;
  const int pad = (kernel - 1) / 2;
  g.padding = {pad, pad, pad, pad}, g.stride = {stride, stride}, g.groups = groups;
  double wall[2] = {1e30, 1e30}, cpu[2] = {1e30, 1e30}, flops = 0;
  for (auto _ : state) {
    for (const int form : {0, 1}) {
      const auto start = clock_type::now();
      const double cpu_start = cpu_seconds();
      const Image<T> y = conv2d_gemm(x, w, b, g, form == 0 ? ConvGemmForm::automatic : ConvGemmForm::im2col);
      cpu[form] = std::min(cpu[form], cpu_seconds() - cpu_start);
      wall[form] = std::min(wall[form], seconds_since(start));
      flops = 2.0 * double(y.shape(1) * y.shape(2) * k * k) * double(c_in / groups) * double(c_out);
      benchmark::DoNotOptimize(y.data());
    }
    state.SetIterationTime(wall[0]);
  }
  state.counters["conv_s"] = wall[0];
  state.counters["conv_cpu_s"] = cpu[0];
  state.counters["im2col_s"] = wall[1];
  state.counters["im2col_cpu_s"] = cpu[1];
  state.counters["GFLOPs"] = flops / wall[0] / 1e9;
  state.counters["dgemm_GFLOPs"] = dgemm_rate;
  state.counters["ratio"] = flops / wall[0] / 1e9 / dgemm_rate;
  state.counters["cpu_ratio"] = flops / cpu[0] / 1e9 / dgemm_cpu_rate;
  state.counters["im2col_cpu_ratio"] = flops / cpu[1] / 1e9 / dgemm_cpu_rate;
}

// The dense engine with content terms present (Eq. 8: W_qry, W_key and u
// non-zero), the MHSA alone on side x side tokens of `channels` channels:
//   "theorem1": the Theorem 1 layer (alpha = 60) plus small random content
//               terms, so the softmax keeps only a few keys near each target;
//   "random":   every parameter random, D_k = channels, the positional part
//               scaled down: the softmax keeps (almost) every key.
// GFLOPs here counts executed work only (dense_flops - flops_skipped).
void bench_dense_content(benchmark::State& state, int side, int kernel, int channels, std::string layer_kind) {
  const std::size_t ch = std::size_t(channels), k = std::size_t(kernel), n = std::size_t(side) * std::size_t(side);
  Random random(2);
  MhsaLayer<double> layer;
  if (layer_kind == "theorem1") {
    const Kernel<double> w = random.stream(purpose_id("conv_weight")).uniform_tensor<double, 4>({ch, ch, k, k});
    Theorem1Options options;
    options.heads = kernel * kernel, options.head_dim = channels, options.alpha = 60;
    layer = theorem1_layer<double>(w, std::nullopt, options);
    for (AttentionHead<double>& head : layer.heads) {
      head.w_qry = random.uniform_tensor<double, 2>({head.w_qry.shape(0), head.w_qry.shape(1)}) * 0.1;
      head.w_key = random.uniform_tensor<double, 2>({head.w_key.shape(0), head.w_key.shape(1)}) * 0.1;
      head.u = random.uniform_tensor<double, 1>({head.u.shape(0)}) * 0.1;
    }
  } else {
    const std::size_t d_p = std::size_t(encoding_dim(layer.encoding));
    for (int h = 0; h < kernel * kernel; ++h)
      layer.heads.push_back({random.uniform_tensor<double, 2>({ch, ch}) * 0.2, random.uniform_tensor<double, 2>({ch, ch}) * 0.2,
                             random.uniform_tensor<double, 2>({ch, d_p}) * 1e-3, random.uniform_tensor<double, 1>({ch}),
                             random.uniform_tensor<double, 1>({ch}), random.uniform_tensor<double, 2>({ch, ch})});
    layer.w_out = random.uniform_tensor<double, 2>({layer.heads.size() * ch, ch});
    layer.b_out = random.uniform_tensor<double, 1>({ch});
  }
  const Matrix<double> tokens = random.stream(purpose_id("input")).uniform_tensor<double, 2>({n, ch});
  double mhsa_s = 1e30, executed = 0, skipped = 0, flops = 0;
  for (auto _ : state) {
    const auto start = clock_type::now();
    const EngineResult<double> result = run_mhsa(Engine::dense, layer, tokens, std::size_t(side), std::size_t(side));
    mhsa_s = std::min(mhsa_s, seconds_since(start));
    benchmark::DoNotOptimize(result.y.data());
    flops = result.flops, skipped = result.flops_skipped, executed = flops - skipped;
    state.SetIterationTime(mhsa_s);
  }
  state.counters["mhsa_s"] = mhsa_s;
  state.counters["GFLOPs"] = executed / mhsa_s / 1e9;
  state.counters["dgemm_GFLOPs"] = dgemm_rate;
  state.counters["ratio"] = executed / mhsa_s / 1e9 / dgemm_rate;
  state.counters["skipped_pct"] = 100 * skipped / flops;
  state.SetLabel("dense");
}

}  // namespace

int main(int argc, char** argv) {
  use_best_environment(argv);  // as attnconv does (parallel/process_environment.hpp)
  benchmark::Initialize(&argc, argv);
  dgemm_rate = measure_dgemm_rate();
  std::printf("dgemm (2048^3, %d engine threads x 1 BLAS thread, OpenBLAS kernel %s): %.1f GFLOP/s, %.1f per CPU second\n",
              engine_threads(), blas_kernel().c_str(), dgemm_rate, dgemm_cpu_rate);
  // The performance targets (bench/cases/) first, then the scaling table.
  const struct {
    int side, kernel, channels;
    const char* engine;
  } targets[] = {{64, 3, 32, "dense"}, {64, 3, 32, "auto"}, {128, 7, 64, "auto"}, {256, 7, 64, "auto"}};
  for (const auto& t : targets)
    benchmark::RegisterBenchmark(("target/" + std::to_string(t.side) + "/K" + std::to_string(t.kernel) + "/C" +
                                  std::to_string(t.channels) + "/" + t.engine).c_str(),
                                 bench_case, t.side, t.kernel, t.channels, std::string(t.engine))
        ->Iterations(1)->Unit(benchmark::kMillisecond)->UseManualTime();
  // The convolution alone: the targets' 64 -> 64, K = 7 at three sizes, then small and odd ones.
  const struct {
    int side, c_in, c_out, kernel, stride, groups;
    bool float32;
  } convs[] = {{128, 64, 64, 7, 1, 1, false}, {256, 64, 64, 7, 1, 1, false}, {512, 64, 64, 7, 1, 1, false},
               {150, 3, 32, 7, 2, 1, false},  {64, 32, 32, 3, 1, 4, false},   {64, 32, 32, 3, 1, 32, false},
               {16, 64, 64, 7, 1, 1, false},  {128, 64, 64, 7, 1, 1, true}};
  for (const auto& c : convs) {
    const std::string name = "conv/" + std::to_string(c.side) + "/C" + std::to_string(c.c_in) + "to" +
                             std::to_string(c.c_out) + "/K" + std::to_string(c.kernel) + "/s" +
                             std::to_string(c.stride) + "/g" + std::to_string(c.groups) + (c.float32 ? "/f32" : "/f64");
    const auto run = c.float32 ? bench_conv<float> : bench_conv<double>;
    benchmark::RegisterBenchmark(name.c_str(), run, c.side, c.c_in, c.c_out, c.kernel, c.stride, c.groups)
        ->Iterations(3)->Unit(benchmark::kMillisecond)->UseManualTime();
  }
  for (const char* kind : {"theorem1", "random"})
    benchmark::RegisterBenchmark(("dense_content/64/K3/C32/" + std::string(kind)).c_str(), bench_dense_content, 64, 3,
                                 32, std::string(kind))
        ->Iterations(3)->Unit(benchmark::kMillisecond)->UseManualTime();
  for (const char* engine : {"dense", "separable"})
    for (const int channels : {16, 64})
      for (const int kernel : {3, 5, 7})
        for (const int side : {16, 32, 64, 128, 256}) {
          // dense: 16^2..128^2, but 128^2 only with 9 heads: its (HW)^2 scores per head
          // take minutes at 25 and 49 heads (see docs/performance.md).
          if (std::string(engine) == "dense" && (side > 128 || (side == 128 && kernel > 3))) continue;
          benchmark::RegisterBenchmark(("scaling/" + std::string(engine) + "/C" + std::to_string(channels) + "/H" +
                                        std::to_string(kernel * kernel) + "/" + std::to_string(side))
                                           .c_str(),
                                       bench_case, side, kernel, channels, std::string(engine))
              ->Iterations(1)->Unit(benchmark::kMillisecond)->UseManualTime();
        }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
