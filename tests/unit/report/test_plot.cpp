#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "report/plot.hpp"
#include "cli_support.hpp"
#include "cases/case_loader.hpp"
#include "proof/proof.hpp"
#include "construction/theorem1.hpp"
#include "mhsa/attention_row.hpp"
#include "mhsa/dense_engine.hpp"
#include "ops/padding.hpp"
#include "tensor/random.hpp"

using namespace attnconv;

TEST_CASE("one query's attention rows agree with the dense engine and the construction", "[plot]") {
  // A general layer: the dense engine's output for query q is sum_k P_qk X_k W_val W_out + b.
  Random random(5);
  const std::size_t h = 5, w = 6, d_in = 3;
  const Kernel<double> conv = random.stream(1).uniform_tensor<double, 4>({2, d_in, 3, 3});
  Theorem1Options options;
  options.heads = 9, options.head_dim = 2, options.alpha = 1.5;
  MhsaLayer<double> layer = theorem1_layer<double>(conv, std::nullopt, options);
  for (auto& head : layer.heads) {  // make it general: content terms non-zero
    head.w_qry = random.stream(2).uniform_tensor<double, 2>({d_in, head.w_qry.shape(1)});
    head.w_key = random.stream(3).uniform_tensor<double, 2>({d_in, head.w_key.shape(1)});
    head.u = random.stream(4).uniform_tensor<double, 1>({head.u.shape(0)});
  }
  const Matrix<double> x = random.stream(6).uniform_tensor<double, 2>({h * w, d_in});
  const std::size_t query = 2 * w + 3;
  const Matrix<double> p = attention_rows(layer, x, h, w, query);
  const Matrix<double> y = mhsa_dense(layer, x, h, w);
  Vector<double> expected = layer.b_out;
  for (std::size_t head = 0; head < layer.heads.size(); ++head)
    for (std::size_t k = 0; k < h * w; ++k)
      for (std::size_t d = 0; d < layer.head_dim(); ++d) {
        double value = 0;
        for (std::size_t c = 0; c < d_in; ++c) value += x(k, c) * layer.heads[head].w_val(c, d);
        for (std::size_t o = 0; o < layer.out_dim(); ++o)
          expected(o) += p(head, k) * value * layer.w_out(head * layer.head_dim() + d, o);
      }
  for (std::size_t o = 0; o < layer.out_dim(); ++o) CHECK(y(query, o) == Approx(expected(o)).margin(1e-12));
  for (std::size_t head = 0; head < layer.heads.size(); ++head) {
    double sum = 0;
    for (std::size_t k = 0; k < h * w; ++k) sum += p(head, k);
    CHECK(sum == Approx(1.0).margin(1e-12));
  }
}

TEST_CASE("under the construction at large alpha each head attends to q + Delta", "[plot]") {
  Random random(7);
  const Kernel<double> conv = random.stream(1).uniform_tensor<double, 4>({2, 2, 3, 3});
  Theorem1Options options;
  options.heads = 9, options.head_dim = 2, options.alpha = 60;
  const MhsaLayer<double> layer = theorem1_layer<double>(conv, std::nullopt, options);
  const std::size_t h = 6, w = 7, qi = 3, qj = 2;
  const Matrix<double> x = random.stream(2).uniform_tensor<double, 2>({h * w, 2});
  const Matrix<double> p = attention_rows(layer, x, h, w, qi * w + qj);
  for (int head = 0; head < 9; ++head) {
    const auto shift = target_shift(head / 3, head % 3, {3, 3}, {1, 1});
    CHECK(p(std::size_t(head), std::size_t((int(qi) + shift[0]) * int(w) + int(qj) + shift[1])) >= 1 - 4 * std::exp(-60.0) - 1e-15);  // 1 - P <= eps(alpha) ~ 4 e^-alpha, plus round-off
  }
}

TEST_CASE("the attention a Theorem 1 figure draws is the checked layer's own, encoding and precision included",
          "[plot]") {
  const std::vector<Case> cases = load_case_text(R"({"cases": [{"name": "general", "proof": "cordonnier2020.theorem1",
      "params": {"image": [6, 6], "kernel": [3, 3], "padding": 1, "in_channels": 2, "out_channels": 2, "heads": 9,
                 "head_dim": 2, "alpha": 0.5, "encoding": "quadratic_general", "seed": 3}}]})",
                                                 "figure_case.json");
  REQUIRE(cases.size() == 1);
  const ProofDef* proof = find_proof("cordonnier2020.theorem1");
  REQUIRE(proof->figures);
  const std::vector<FigureData> figures = proof->figures(cases[0], json::object());
  REQUIRE(figures.size() == 1);
  const HeatMapGrid& grid = std::get<HeatMapGrid>(figures[0].content);
  REQUIRE(grid.panels.size() == 9);
  REQUIRE(grid.marker);

  // The layer as the proof checks it: the seed's weights, the generalised
  // encoding with the seed's per-head precisions.
  const Random random(3);
  const Image<double> x = random.stream(purpose_id("input")).uniform_tensor<double, 3>({2, 6, 6});
  const Kernel<double> w = random.stream(purpose_id("conv_weight")).uniform_tensor<double, 4>({2, 2, 3, 3});
  Theorem1Options options;
  options.heads = 9, options.head_dim = 2, options.alpha = 0.5;
  options.encoding = Encoding::quadratic_general;
  options.precision = random_precisions(3, 9);
  const auto probabilities = [&](const Theorem1Options& o) {
    const MhsaLayer<double> layer = theorem1_layer<double>(w, std::nullopt, o);
    const Image<double> xpad = pad(x, Padding{1, 1, 1, 1}, PaddingMode::zeros);
    const auto [qi, qj] = *grid.marker;
    CHECK(qi == 4);  // the centre output pixel (3, 3), at padded coordinates (3 + 1, 3 + 1)
    CHECK(qj == 4);
    return attention_rows(layer, image_to_tokens(xpad), 8, 8, std::size_t(qi) * 8 + std::size_t(qj));
  };
  const Matrix<double> own = probabilities(options);
  Theorem1Options quadratic = options;
  quadratic.encoding = Encoding::quadratic, quadratic.precision.clear();
  const Matrix<double> theorem = probabilities(quadratic);

  double drawn_vs_own = 0, drawn_vs_quadratic = 0;
  for (std::size_t h = 0; h < 9; ++h) {
    const auto& values = grid.panels[h].values;
    REQUIRE(values.shape(0) == 8);
    REQUIRE(values.shape(1) == 8);
    for (std::size_t i = 0; i < 8; ++i)
      for (std::size_t j = 0; j < 8; ++j) {
        drawn_vs_own = std::max(drawn_vs_own, std::abs(values(i, j) - own(h, i * 8 + j)));
        drawn_vs_quadratic = std::max(drawn_vs_quadratic, std::abs(values(i, j) - theorem(h, i * 8 + j)));
      }
  }
  CHECK(drawn_vs_own == 0);
  CHECK(drawn_vs_quadratic > 0.1);  // the quadratic encoding's attention is visibly another figure
}

namespace {

// A report of the given cases as `attnconv run` writes it: each verified.
json report_of(const std::vector<Case>& cases) {
  json report = {{"cases", json::array()}};
  for (const Case& c : cases) {
    const Outcome outcome = find_proof(c.proof)->verify(c);
    report["cases"].push_back({{"name", c.name}, {"sweep_group", c.base_name}, {"sweep_point", c.sweep_point},
                               {"proof", c.proof}, {"params", c.params}, {"status", "pass"},
                               {"metrics", outcome.metrics}});
  }
  return report;
}

// The rows of a figure's .dat file, comments left out.
std::vector<std::vector<std::string>> data_rows(const std::filesystem::path& file) {
  std::istringstream text(attnconv::testing::read_text(file));
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(text, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    rows.emplace_back();
    for (std::string word; words >> word;) rows.back().push_back(word);
  }
  return rows;
}

}  // namespace

TEST_CASE("the cost-table figure draws the Stage I / Stage II counts its case reported, for every case", "[plot]") {
  const std::vector<Case> cases = load_case_text(R"({"cases": [
      {"name": "cost", "proof": "acmix2022.cost_table", "params": {"image": [6, 6], "in_channels": 4,
       "out_channels": 8, "heads": 2, "kernel_att": 3, "kernel_conv": 3, "seed": 1}, "sweep": {"in_channels": [4, 8]}},
      {"name": "t1", "proof": "cordonnier2020.theorem1", "params": {"image": [5, 5], "kernel": [3, 3], "padding": 1,
       "in_channels": 2, "out_channels": 2, "heads": 9, "head_dim": 2, "seed": 1}, "sweep": {"alpha": [1, 2]}}]})",
                                                 "plot_cases.json");
  REQUIRE(cases.size() == 4);
  const json report = report_of(cases);

  // The figure data, from the proof alone: one bar per method, its reported counts.
  for (std::size_t k = 0; k < 2; ++k) {
    const json& table = report["cases"][k]["metrics"]["table"];
    const std::vector<FigureData> figures = find_proof("acmix2022.cost_table")->figures(cases[k], report["cases"][k]["metrics"]);
    REQUIRE(figures.size() == 1);
    const StackedBars& bars = std::get<StackedBars>(figures[0].content);
    REQUIRE(bars.categories == std::vector<std::string>{"acmix", "convolution", "self_attention"});
    REQUIRE(bars.series.size() == 2);
    for (std::size_t i = 0; i < bars.categories.size(); ++i) {
      const json& method = table[bars.categories[i]];
      CHECK(bars.values(i, 0) == method["stage1_multiply_adds"]["measured"].get<double>());
      CHECK(bars.values(i, 1) == method["stage2_multiply_adds"]["measured"].get<double>());
    }
    // Table 1's convolution: Stage I k^2 C_in C_out H W, Stage II k^2 C_out H W (stride 1).
    const double c_in = cases[k].params["in_channels"].get<double>();
    CHECK(bars.values(1, 0) == 9 * c_in * 8 * 36);
    CHECK(bars.values(1, 1) == 9 * 8 * 36);
  }
  // A table without the stage counts is refused with the reason, not drawn as zeros.
  json broken = report["cases"][0]["metrics"];
  broken["table"]["convolution"].erase("stage2_multiply_adds");
  CHECK_THROWS_WITH(find_proof("acmix2022.cost_table")->figures(cases[0], broken),
                    Catch::Contains("stage2_multiply_adds") && Catch::Contains("convolution"));

  // Through plot: a cost figure per case of the sweep, an attention figure for
  // the first case of the Theorem 1 sweep only; the .dat rows are the counts.
  const attnconv::testing::ScratchDir dir("plot_bars");
  PlotOptions options;
  options.out_dir = dir.path.string();
  options.gnuplot = "true";  // writes the .dat and .gp files; draws nothing
  plot_report(report, options);
  for (std::size_t k = 0; k < 2; ++k) {
    const auto file = dir.path / ("cost-" + std::string(k ? "cost_in_channels_8_" : "cost_in_channels_4_") + ".dat");
    REQUIRE(std::filesystem::exists(file));
    const json& table = report["cases"][k]["metrics"]["table"];
    const auto rows = data_rows(file);
    REQUIRE(rows.size() == 3);
    for (const auto& row : rows) {
      REQUIRE(row.size() == 3);
      CHECK(row[1] == table[row[0]]["stage1_multiply_adds"]["measured"].dump());
      CHECK(row[2] == table[row[0]]["stage2_multiply_adds"]["measured"].dump());
    }
  }
  CHECK(std::filesystem::exists(dir.path / "attention-t1_alpha_1_.dat"));
  CHECK_FALSE(std::filesystem::exists(dir.path / "attention-t1_alpha_2_.dat"));
}

TEST_CASE("the plot command names no proof: what it draws comes from the proofs", "[plot]") {
  std::vector<std::string> ids = {"acmix2022.", "cordonnier2020."};
  for (const ProofDef* proof : all_proofs()) ids.push_back(proof->id);
  for (const auto& entry : std::filesystem::directory_iterator(std::string(ATTNCONV_SOURCE_DIR) + "/src/cli")) {
    const std::string text = attnconv::testing::read_text(entry.path());
    REQUIRE_FALSE(text.empty());
    for (const std::string& id : ids) {
      INFO(entry.path().string() << " names " << id);
      CHECK(text.find(id) == std::string::npos);
    }
  }
}
