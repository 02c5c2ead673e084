// liu2021.trained_window_attention on a tiny generated layer (a batch of 2, a
// 3 x 5 grid, D = 4, 2 heads, window [4, 2], shift [2, 1]: padded to 4 x 6, and
// the shift 0 on the rows, which the window covers), against plain loops that
// follow torchvision's shifted_window_attention step by step: pad with zero
// tokens, roll the map by -s, Swin's slices for the mask labels (Python slice
// semantics, -0 included), attention window by window, roll back, crop.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <xtensor/xnpy.hpp>

#include "cases/case_loader.hpp"
#include "cli_support.hpp"
#include "outcome_tensors.hpp"
#include "proof/verdict.hpp"
#include "run/case_run.hpp"
#include "tensor/random.hpp"

using namespace attnconv;
using attnconv::testing::ScratchDir;

namespace {

constexpr int N = 2, GH = 3, GW = 5, D = 4, HEADS = 2, HD = D / HEADS, M1 = 4, M2 = 2, S1 = 2, S2 = 1;
constexpr int HP = 4, WP = 6, T = GH * GW;

struct Plain {
  xt::xarray<double> y;  // (N, T, D)
  xt::xarray<double> p;  // (N, HEADS, T, T)
};

// A Python slice [start, stop) of an axis of length L: negative from the end, "None" the end.
int py(int i, int length) { return i < 0 ? length + i : i; }

Plain plain_layer(const xt::xarray<double>& x, const xt::xarray<double>& w, const xt::xarray<double>& b,
                  const xt::xarray<double>& wo, const xt::xarray<double>& bo, const xt::xarray<double>& table) {
  // torchvision's rule: no shift on an axis where the window covers the padded map.
  const int s1 = M1 >= HP ? 0 : S1, s2 = M2 >= WP ? 0 : S2;
  // The mask labels on the padded map, by Swin's slices (only with a shift).
  int labels[HP][WP] = {};
  if (s1 + s2 > 0) {
    const int rows[3][2] = {{0, py(-M1, HP)}, {py(-M1, HP), s1 ? py(-s1, HP) : 0}, {s1 ? py(-s1, HP) : 0, HP}};
    const int cols[3][2] = {{0, py(-M2, WP)}, {py(-M2, WP), s2 ? py(-s2, WP) : 0}, {s2 ? py(-s2, WP) : 0, WP}};
    int count = 0;
    for (const auto& r : rows)
      for (const auto& c : cols) {
        for (int i = r[0]; i < r[1]; ++i)
          for (int j = c[0]; j < c[1]; ++j) labels[i][j] = count;
        ++count;
      }
  }
  Plain out{xt::zeros<double>({N, T, D}), xt::zeros<double>({N, HEADS, T, T})};
  for (int n = 0; n < N; ++n) {
    // The rolled map: position (i, j) holds the padded token ((i + s1) mod HP, (j + s2) mod WP), -1 the padding.
    int source[HP][WP];
    xt::xarray<double> qkv = xt::zeros<double>({HP, WP, 3 * D});
    for (int i = 0; i < HP; ++i)
      for (int j = 0; j < WP; ++j) {
        const int pi = (i + s1) % HP, pj = (j + s2) % WP;
        source[i][j] = pi < GH && pj < GW ? pi * GW + pj : -1;
        for (int r = 0; r < 3 * D; ++r) {
          qkv(i, j, r) = b(r);
          if (source[i][j] >= 0)
            for (int c = 0; c < D; ++c) qkv(i, j, r) += w(r, c) * x(n, source[i][j], c);
        }
      }
    for (int wi = 0; wi < HP; wi += M1)
      for (int wj = 0; wj < WP; wj += M2)
        for (int a = 0; a < M1 * M2; ++a) {
          const int ai = wi + a / M2, aj = wj + a % M2;
          std::vector<double> o(D, 0.0);
          for (int h = 0; h < HEADS; ++h) {
            std::vector<double> s(M1 * M2, 0.0);
            double top = -1e300, total = 0;
            for (int k = 0; k < M1 * M2; ++k) {
              const int ki = wi + k / M2, kj = wj + k % M2;
              for (int c = 0; c < HD; ++c) s[k] += qkv(ai, aj, h * HD + c) * qkv(ki, kj, D + h * HD + c);
              const int index = (a / M2 - k / M2 + M1 - 1) * (2 * M2 - 1) + (a % M2 - k % M2 + M2 - 1);
              s[k] = s[k] / std::sqrt(double(HD)) + table(index, h) + (labels[ai][aj] != labels[ki][kj] ? -100.0 : 0.0);
              top = std::max(top, s[k]);
            }
            for (double& v : s) total += v = std::exp(v - top);
            for (int k = 0; k < M1 * M2; ++k) {
              const int ki = wi + k / M2, kj = wj + k % M2;
              for (int c = 0; c < HD; ++c) o[h * HD + c] += s[k] / total * qkv(ki, kj, 2 * D + h * HD + c);
              if (source[ai][aj] >= 0 && source[ki][kj] >= 0) out.p(n, h, source[ai][aj], source[ki][kj]) = s[k] / total;
            }
          }
          if (source[ai][aj] < 0) continue;  // cropped away
          for (int r = 0; r < D; ++r) {
            out.y(n, source[ai][aj], r) = bo(r);
            for (int c = 0; c < D; ++c) out.y(n, source[ai][aj], r) += wo(r, c) * o[c];
          }
        }
  }
  return out;
}

using testing::max_difference;
using testing::tensor;

}  // namespace

TEST_CASE("A tiny Swin window layer, padded and half shifted: as torchvision's steps compute it",
          "[trained_window_attention]") {
  ScratchDir dir("trained_window_attention");
  Random random(29);
  std::map<std::string, xt::xarray<double>> t{
      {"qkv.weight", random.stream(1).uniform_tensor<double, 2>({3 * D, D})},
      {"qkv.bias", random.stream(2).uniform_tensor<double, 1>({3 * D})},
      {"proj.weight", random.stream(3).uniform_tensor<double, 2>({D, D})},
      {"proj.bias", random.stream(4).uniform_tensor<double, 1>({D})},
      {"relative_position_bias_table", random.stream(5).uniform_tensor<double, 2>({(2 * M1 - 1) * (2 * M2 - 1), HEADS}) * 3.0},
      {"input", random.stream(6).uniform_tensor<double, 3>({N, T, D}) * 2.0}};
  const Plain plain = plain_layer(t["input"], t["qkv.weight"], t["qkv.bias"], t["proj.weight"], t["proj.bias"],
                                  t["relative_position_bias_table"]);
  t["reference_output"] = plain.y;
  json weights = json::object();
  for (const auto& [name, value] : t) {
    xt::dump_npy((dir.path / (name + ".npy")).string(), value);
    weights[name] = name + ".npy";
  }
  const json params = {{"embed_dim", D}, {"heads", HEADS}, {"grid", {GH, GW}}, {"window", {M1, M2}},
                       {"shift", {S1, S2}}, {"kernel", {3, 3}}};
  const json file = {{"cases", {{{"name", "tiny"}, {"proof", "liu2021.trained_window_attention"},
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
  CHECK(out.metrics["effective_shift"] == json::array({0, 1}));
  // The padding's attention: what each grid query's row misses of 1.
  const std::vector<double> padding = out.metrics["head_mass_padding"].get<std::vector<double>>();
  REQUIRE(padding.size() == std::size_t(HEADS));
  for (int h = 0; h < HEADS; ++h) {
    double missing = 0;
    for (int n = 0; n < N; ++n)
      for (int q = 0; q < T; ++q) {
        double row = 0;
        for (int k = 0; k < T; ++k) row += plain.p(n, h, q, k);
        missing += 1 - row;
      }
    CHECK(std::abs(padding[std::size_t(h)] - missing / (N * T)) < 1e-14);
    CHECK(padding[std::size_t(h)] > 0.01);  // the padded keys are attended: the identity needs their b_v folded
  }
}
