// cordonnier2020.trained_attention on a tiny generated layer (a batch of 4,
// one class token and a 3 x 4 grid, D = 4, 2 heads), against plain loops
// written from the definitions: the layer (nn.MultiheadAttention's formula),
// the kernel K_q(δ) of every query materialised, the white-input kernel its
// mean over the queries whose key exists, the least-squares kernel through its
// normal equations, the per-head masses and mean attention distances.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "cases/case_loader.hpp"
#include "cli_support.hpp"
#include "proof/verdict.hpp"
#include "run/case_run.hpp"
#include "tensor/random.hpp"
#include "outcome_tensors.hpp"

using namespace attnconv;
using attnconv::testing::ScratchDir;
namespace fs = std::filesystem;

namespace {

constexpr int N = 4, E = 1, GH = 3, GW = 4, D = 4, HEADS = 2, HD = D / HEADS, T = E + GH * GW;

struct Plain {
  xt::xarray<double> y;  // (N, T, D)
  xt::xarray<double> p;  // (N, HEADS, T, T)
};

Plain plain_layer(const xt::xarray<double>& x, const xt::xarray<double>& w, const xt::xarray<double>& b,
                  const xt::xarray<double>& wo, const xt::xarray<double>& bo) {
  Plain out{xt::zeros<double>({N, T, D}), xt::zeros<double>({N, HEADS, T, T})};
  for (int n = 0; n < N; ++n) {
    xt::xarray<double> qkv = xt::zeros<double>({T, 3 * D});
    for (int t = 0; t < T; ++t)
      for (int r = 0; r < 3 * D; ++r) {
        qkv(t, r) = b(r);
        for (int i = 0; i < D; ++i) qkv(t, r) += w(r, i) * x(n, t, i);
      }
    xt::xarray<double> o = xt::zeros<double>({T, D});
    for (int h = 0; h < HEADS; ++h)
      for (int q = 0; q < T; ++q) {
        std::vector<double> s(T);
        double total = 0;
        for (int k = 0; k < T; ++k) {
          for (int j = 0; j < HD; ++j) s[k] += qkv(q, h * HD + j) * qkv(k, D + h * HD + j);
          total += s[k] = std::exp(s[k] / std::sqrt(double(HD)));
        }
        for (int k = 0; k < T; ++k) {
          out.p(n, h, q, k) = s[k] / total;
          for (int j = 0; j < HD; ++j) o(q, h * HD + j) += out.p(n, h, q, k) * qkv(k, 2 * D + h * HD + j);
        }
      }
    for (int t = 0; t < T; ++t)
      for (int r = 0; r < D; ++r) {
        out.y(n, t, r) = bo(r);
        for (int c = 0; c < D; ++c) out.y(n, t, r) += wo(r, c) * o(t, c);
      }
  }
  return out;
}

using testing::max_difference;
using testing::tensor;

}  // namespace

TEST_CASE("A tiny attention layer: kernels, masses and distances as plain loops compute them", "[trained_attention]") {
  ScratchDir dir("trained_attention");
  Random random(23);
  std::map<std::string, xt::xarray<double>> t{
      {"in_proj_weight", random.stream(1).uniform_tensor<double, 2>({3 * D, D})},
      {"in_proj_bias", random.stream(2).uniform_tensor<double, 1>({3 * D})},
      {"out_proj.weight", random.stream(3).uniform_tensor<double, 2>({D, D})},
      {"out_proj.bias", random.stream(4).uniform_tensor<double, 1>({D})},
      {"input", random.stream(5).uniform_tensor<double, 3>({N, T, D}) * 2.0}};
  const Plain plain = plain_layer(t["input"], t["in_proj_weight"], t["in_proj_bias"], t["out_proj.weight"], t["out_proj.bias"]);
  t["reference_output"] = plain.y;
  json weights = json::object();
  for (const auto& [name, value] : t) {
    xt::dump_npy((dir.path / (name + ".npy")).string(), value);
    weights[name] = name + ".npy";
  }
  const json params = {{"embed_dim", D}, {"heads", HEADS}, {"grid", {GH, GW}}, {"extra_tokens", E}, {"kernel", {3, 3}}};
  const json file = {{"cases", {{{"name", "tiny"}, {"proof", "cordonnier2020.trained_attention"},
                                 {"params", params}, {"weights", weights}}}}};
  testing::write_text(dir.path / "case.json", file.dump());
  const Case c = load_case_file((dir.path / "case.json").string()).at(0);
  REQUIRE(c.batch == N);
  const CaseResult result = run_verify(c);
  const Outcome& out = result.outcome;
  CHECK(result.verdict.verdict == Verdict::holds);
  CHECK(out.metrics["reference_rel_l2"].get<double>() < 1e-14);
  CHECK(out.metrics["identity_rel_l2"].get<double>() < 1e-14);
  CHECK(max_difference(tensor(out, "actual"), plain.y) < 1e-13);
  CHECK(max_difference(tensor(out, "attention"), plain.p) < 1e-15);

  // M_h = W_o^h W_v^h and K_q(δ) for every grid query and key.
  xt::xarray<double> m = xt::zeros<double>({HEADS, D, D});
  const auto& w = t["in_proj_weight"];
  const auto& wo = t["out_proj.weight"];
  for (int h = 0; h < HEADS; ++h)
    for (int o = 0; o < D; ++o)
      for (int i = 0; i < D; ++i)
        for (int j = 0; j < HD; ++j) m(h, o, i) += wo(o, h * HD + j) * w(2 * D + h * HD + j, i);
  const auto kernel_at = [&](int n, int q, int k, int o, int i) {
    double s = 0;
    for (int h = 0; h < HEADS; ++h) s += plain.p(n, h, E + q, E + k) * m(h, o, i);
    return s;
  };
  // The white-input kernel: the mean of K_q(δ) over the queries whose key q + δ is on the grid.
  xt::xarray<double> white = xt::zeros<double>({D, D, 3, 3});
  for (int dr = -1; dr <= 1; ++dr)
    for (int dc = -1; dc <= 1; ++dc) {
      int count = 0;
      for (int n = 0; n < N; ++n)
        for (int qr = 0; qr < GH; ++qr)
          for (int qc = 0; qc < GW; ++qc) {
            const int kr = qr + dr, kc = qc + dc;
            if (kr < 0 || kr >= GH || kc < 0 || kc >= GW) continue;
            ++count;
            for (int o = 0; o < D; ++o)
              for (int i = 0; i < D; ++i) white(o, i, dr + 1, dc + 1) += kernel_at(n, qr * GW + qc, kr * GW + kc, o, i);
          }
      xt::view(white, xt::all(), xt::all(), dr + 1, dc + 1) /= double(count);
    }
  CHECK(max_difference(tensor(out, "conv_weight"), white) < 1e-14);

  // The least-squares kernel: the normal equations A^T (A s - Y) = 0 hold for the dumped one.
  const auto& lw = tensor(out, "lstsq_conv_weight");
  const auto& lb = tensor(out, "lstsq_conv_bias");
  REQUIRE(lw.shape() == std::vector<std::size_t>{D, D, 3, 3});
  const int rows = N * GH * GW, cols = D * 9 + 1;
  xt::xarray<double> a = xt::zeros<double>({rows, cols}), residual = xt::zeros<double>({rows, D});
  for (int n = 0; n < N; ++n)
    for (int qr = 0; qr < GH; ++qr)
      for (int qc = 0; qc < GW; ++qc) {
        const int row = (n * GH + qr) * GW + qc;
        for (int o = 0; o < D; ++o) residual(row, o) = lb(o) - plain.y(n, E + qr * GW + qc, o);
        a(row, cols - 1) = 1;
        for (int pr = 0; pr < 3; ++pr)
          for (int pc = 0; pc < 3; ++pc) {
            const int kr = qr + pr - 1, kc = qc + pc - 1;
            if (kr < 0 || kr >= GH || kc < 0 || kc >= GW) continue;
            for (int i = 0; i < D; ++i) {
              const double v = t["input"](n, E + kr * GW + kc, i);
              a(row, (i * 3 + pr) * 3 + pc) = v;
              for (int o = 0; o < D; ++o) residual(row, o) += lw(o, i, pr, pc) * v;
            }
          }
      }
  double worst = 0, fit = 0, total = 0;
  for (int col = 0; col < cols; ++col)
    for (int o = 0; o < D; ++o) {
      double g = 0;
      for (int row = 0; row < rows; ++row) g += a(row, col) * residual(row, o);
      worst = std::max(worst, std::abs(g));
    }
  CHECK(worst < 1e-11);
  for (int row = 0; row < rows; ++row)
    for (int o = 0; o < D; ++o) fit += residual(row, o) * residual(row, o);
  for (int n = 0; n < N; ++n)
    for (int q = 0; q < GH * GW; ++q)
      for (int o = 0; o < D; ++o) total += plain.y(n, E + q, o) * plain.y(n, E + q, o);
  CHECK(out.metrics["lstsq_rel_l2"].get<double>() == Approx(std::sqrt(fit / total)).epsilon(1e-10));
  CHECK(out.metrics["lstsq_equations"] == rows);
  CHECK(out.metrics["lstsq_unknowns"] == cols);
  CHECK(out.metrics["lstsq_underdetermined"] == false);  // 48 equations, 37 unknowns, full rank
  CHECK(out.metrics["lstsq_rel_l2"].get<double>() > 1e-3);  // an attention layer is no convolution

  // Per head: masses and the mean attention distance.
  for (int h = 0; h < HEADS; ++h) {
    double outside = 0, extra = 0, distance = 0;
    for (int n = 0; n < N; ++n)
      for (int qr = 0; qr < GH; ++qr)
        for (int qc = 0; qc < GW; ++qc) {
          const int q = E + qr * GW + qc;
          extra += plain.p(n, h, q, 0);
          double on_grid = 0, weighted = 0;
          for (int kr = 0; kr < GH; ++kr)
            for (int kc = 0; kc < GW; ++kc) {
              const double pk = plain.p(n, h, q, E + kr * GW + kc);
              on_grid += pk;
              weighted += pk * std::hypot(double(kr - qr), double(kc - qc));
              if (std::abs(kr - qr) > 1 || std::abs(kc - qc) > 1) outside += pk;
            }
          distance += weighted / on_grid;
        }
    const double queries = N * GH * GW;
    CHECK(out.metrics["head_mass_outside"][h].get<double>() == Approx(outside / queries).epsilon(1e-12));
    CHECK(out.metrics["head_mass_extra"][h].get<double>() == Approx(extra / queries).epsilon(1e-12));
    CHECK(out.metrics["mean_attention_distance"][h].get<double>() == Approx(distance / queries).epsilon(1e-12));
  }

  // A wrong mapping fails: the reference_output of a layer with another out_proj.bias.
  xt::xarray<double> other = plain.y;
  for (int n = 0; n < N; ++n)
    for (int tt = 0; tt < T; ++tt) other(n, tt, 0) += 1e-3;
  xt::dump_npy((dir.path / "reference_output.npy").string(), other);
  const Case wrong = load_case_file((dir.path / "case.json").string()).at(0);
  const CaseResult failed = run_verify(wrong);
  CHECK(failed.verdict.status == Status::fail);
  CHECK(failed.verdict.message.find("reference_output") != std::string::npos);
}
