// cordonnier2020.nearest_convolution: a Gaussian-attention layer against its
// nearest K1 x K2 convolution (docs/design.md, "Nearest convolution").
#include <catch2/catch.hpp>
#include <cmath>
#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "report/plot.hpp"
#include "cli_support.hpp"
#include "construction/gaussian_attention.hpp"
#include "construction/nearest_convolution.hpp"
#include "construction/theorem1.hpp"
#include "cases/case_loader.hpp"
#include "proof/verdict.hpp"
#include "mhsa/dense_engine.hpp"
#include "mhsa/engine.hpp"
#include "reference/mhsa.hpp"
#include "tensor/random.hpp"
#include "outcome_tensors.hpp"

using namespace attnconv;
using attnconv::testing::ScratchDir;
namespace fs = std::filesystem;

namespace {

constexpr const char* proof_id = "cordonnier2020.nearest_convolution";

// A case of the proof in `dir`, its tensors written there as .npy.
Case nearest_case(const fs::path& dir, const json& params, const std::map<std::string, xt::xarray<double>>& tensors) {
  json weights = json::object();
  for (const auto& [name, value] : tensors) {
    xt::dump_npy((dir / (name + ".npy")).string(), value);
    weights[name] = name + ".npy";
  }
  const json file = {{"cases", {{{"name", "nc"}, {"proof", proof_id}, {"params", params}, {"weights", weights}}}}};
  testing::write_text(dir / "case.json", file.dump());
  return load_case_file((dir / "case.json").string()).at(0);
}

using testing::max_difference;
using testing::tensor;

}  // namespace

TEST_CASE("The Theorem 1 construction at alpha = 60 gives back its convolution's kernel", "[nearest_convolution]") {
  ScratchDir dir("nc_theorem1");
  const std::array<int, 2> kernel{3, 3};
  Random random(5);
  const Kernel<double> w_conv = random.stream(1).uniform_tensor<double, 4>({3, 2, 3, 3});
  const Vector<double> bias = random.stream(2).uniform_tensor<double, 1>({3});
  const MhsaLayer<double> layer =
      theorem1_layer<double>(w_conv, bias, {.heads = 9, .head_dim = 3, .alpha = 60, .encoding = Encoding::quadratic, .precision = {}});
  xt::xarray<double> centers = xt::zeros<double>({9, 2}), w_val = xt::zeros<double>({9, 2, 3});
  for (int h = 0; h < 9; ++h) {
    const auto shift = target_shift(h / 3, h % 3, kernel, {1, 1});
    centers(h, 0) = shift[0], centers(h, 1) = shift[1];
    xt::view(w_val, h) = layer.heads[std::size_t(h)].w_val;
  }
  const Case c = nearest_case(dir.path,
                              {{"image", {7, 6}}, {"in_channels", 2}, {"out_channels", 3}, {"heads", 9},
                               {"head_dim", 3}, {"padding", "same"}, {"kernel", kernel}},
                              {{"centers", centers}, {"alphas", xt::ones<double>({9}) * 60.0}, {"w_val", w_val},
                               {"w_out", layer.w_out}, {"b_out", layer.b_out}});
  const Outcome out = find_proof(proof_id)->verify(c);
  CHECK(max_difference(tensor(out, "conv_weight"), w_conv) < 1e-14);
  CHECK(max_difference(tensor(out, "conv_bias"), bias) == 0);
  for (const auto& d : out.metrics["center_distance"]) CHECK(d.get<double>() == 0);
  for (const auto& l : out.metrics["leak"]) CHECK(l.get<double>() < 1e-14);
  CHECK(out.metrics["uncovered_taps"] == 0);
  CHECK(out.metrics["shared_taps"] == 0);
  CHECK(out.metrics["max_abs"].get<double>() < 1e-13);
  CHECK(judge(c, out).verdict == Verdict::holds);

  // The figure: one panel per head, titled with its tap and distance.
  const std::vector<FigureData> figures = find_proof(proof_id)->figures(c, out.metrics);
  REQUIRE(figures.size() == 1);
  const auto& grid = std::get<HeatMapGrid>(figures[0].content);
  REQUIRE(grid.panels.size() == 9);
  CHECK(grid.panels[0].title == "head 0: (-1, -1), 0 px");
  CHECK(grid.panels[8].title == "head 8: (1, 1), 0 px");

  // "auto" finds the 3 x 3 window, and the head taps are the construction's.
  json params = c.params;
  params["kernel"] = "auto";
  const Case automatic = nearest_case(dir.path, params,
                                      {{"centers", centers}, {"alphas", xt::ones<double>({9}) * 60.0},
                                       {"w_val", w_val}, {"w_out", layer.w_out}, {"b_out", layer.b_out}});
  const Outcome auto_out = find_proof(proof_id)->verify(automatic);
  CHECK(auto_out.metrics["kernel_resolved"] == json({3, 3}));
  CHECK(auto_out.metrics["tap"][0] == json({-1, -1}));
  CHECK(auto_out.metrics["tap"][8] == json({1, 1}));
}

// The layer on an H x W image (no padding), written out again from its
// definition: P_h(q, k) = softmax over the image's keys of -alpha |k - q - Delta_h|^2.
TEST_CASE("Off-grid centres: mass outside, leak and the error as computed independently", "[nearest_convolution]") {
  ScratchDir dir("nc_offgrid");
  const int H = 7, W = 8, heads = 2, c_in = 2, c_out = 2;
  const double alpha = 1.5;
  const double centers[heads][2] = {{0.3, -0.2}, {-1.0 + 0.25, 1.0 + 0.1}};  // taps (0, 0) and (-1, 1)
  Random random(9);
  const xt::xtensor<double, 3> w_val = random.stream(1).uniform_tensor<double, 3>({heads, c_in, 1});
  const Matrix<double> w_out = random.stream(2).uniform_tensor<double, 2>({heads, c_out});
  const Vector<double> b_out = random.stream(3).uniform_tensor<double, 1>({c_out});
  const Image<double> x = random.stream(4).uniform_tensor<double, 3>({c_in, H, W});
  xt::xarray<double> centers_array = xt::zeros<double>({heads, 2});
  for (int h = 0; h < heads; ++h) centers_array(h, 0) = centers[h][0], centers_array(h, 1) = centers[h][1];
  const Case c = nearest_case(dir.path,
                              {{"image", {H, W}}, {"in_channels", c_in}, {"out_channels", c_out}, {"heads", heads},
                               {"head_dim", 1}, {"kernel", {3, 3}}, {"alpha", alpha}},
                              {{"centers", centers_array}, {"w_val", w_val}, {"w_out", w_out}, {"b_out", b_out},
                               {"input", x}});
  const Outcome out = find_proof(proof_id)->verify(c);

  const auto attention = [&](int h, int qi, int qj, int ki, int kj) {
    double total = 0;
    for (int a = 0; a < H; ++a)
      for (int b = 0; b < W; ++b)
        total += std::exp(-alpha * (std::pow(a - qi - centers[h][0], 2) + std::pow(b - qj - centers[h][1], 2)));
    return std::exp(-alpha * (std::pow(ki - qi - centers[h][0], 2) + std::pow(kj - qj - centers[h][1], 2))) / total;
  };
  const int qi = (H - 1) / 2, qj = (W - 1) / 2;  // the reference query
  const int taps[heads][2] = {{0, 0}, {-1, 1}};
  for (int h = 0; h < heads; ++h) {
    double inside = 0;
    for (int a = -1; a <= 1; ++a)
      for (int b = -1; b <= 1; ++b) inside += attention(h, qi, qj, qi + a, qj + b);
    CHECK(out.metrics["mass_outside"][h].get<double>() == Approx(1 - inside).epsilon(1e-12));
    CHECK(out.metrics["leak"][h].get<double>() ==
          Approx(1 - attention(h, qi, qj, qi + taps[h][0], qj + taps[h][1])).epsilon(1e-12));
    CHECK(out.metrics["center_distance"][h].get<double>() ==
          Approx(std::hypot(centers[h][0] - taps[h][0], centers[h][1] - taps[h][1])).epsilon(1e-12));
    CHECK(out.metrics["tap"][h] == json({taps[h][0], taps[h][1]}));
  }
  CHECK(out.metrics["uncovered_taps"] == 7);
  CHECK(out.metrics["shared_taps"] == 0);

  // The layer and the convolution of the window of its reference query's attention.
  double interior_max = 0, border_max = 0, interior_diff2 = 0, interior_norm2 = 0;
  for (int o = 0; o < c_out; ++o)
    for (int i = 0; i < H; ++i)
      for (int j = 0; j < W; ++j) {
        double layer = b_out(o), conv = b_out(o);
        for (int h = 0; h < heads; ++h)
          for (int ch = 0; ch < c_in; ++ch) {
            const double m = w_val(h, ch, 0) * w_out(h, o);
            for (int a = 0; a < H; ++a)
              for (int b = 0; b < W; ++b) layer += attention(h, i, j, a, b) * x(ch, a, b) * m;
            for (int a = -1; a <= 1; ++a)
              for (int b = -1; b <= 1; ++b)
                if (i + a >= 0 && i + a < H && j + b >= 0 && j + b < W)
                  conv += attention(h, qi, qj, qi + a, qj + b) * x(ch, i + a, j + b) * m;
          }
        const bool interior = i >= 1 && i < H - 1 && j >= 1 && j < W - 1;
        (interior ? interior_max : border_max) = std::max(interior ? interior_max : border_max, std::abs(layer - conv));
        if (interior) interior_diff2 += (layer - conv) * (layer - conv), interior_norm2 += conv * conv;
      }
  CHECK(out.metrics["max_abs_interior"].get<double>() == Approx(interior_max).epsilon(1e-10));
  CHECK(out.metrics["max_abs_border"].get<double>() == Approx(border_max).epsilon(1e-10));
  CHECK(out.metrics["rel_l2_interior"].get<double>() ==
        Approx(std::sqrt(interior_diff2 / interior_norm2)).epsilon(1e-10));
  CHECK(interior_max > 1e-3);  // off the grid at alpha 1.5: far from a convolution
  CHECK(judge(c, out).verdict == Verdict::fails);
}

TEST_CASE("epfml/attention-cnn parameters mapped as documented are the same layer as Eq. 8", "[nearest_convolution]") {
  ScratchDir dir("nc_epfml");
  const std::size_t H = 6, W = 5, heads = 3, c_in = 2, d_h = 2, c_out = 3, d_k = 2;
  Random random(21);
  // epfml: centre mu (row, column) and spread S per head, Sigma^-1 = S S^T.
  const Matrix<double> mu = random.stream(1).uniform_tensor<double, 2>({heads, 2}) * 2.0;
  const xt::xtensor<double, 3> spread = random.stream(2).uniform_tensor<double, 3>({heads, 2, 2}) + xt::eye<double>(2);
  const xt::xtensor<double, 3> w_val = random.stream(3).uniform_tensor<double, 3>({heads, c_in, d_h});
  const Matrix<double> w_out = random.stream(4).uniform_tensor<double, 2>({heads * d_h, c_out});
  const Vector<double> b_out = random.stream(5).uniform_tensor<double, 1>({c_out});
  const xt::xtensor<double, 3> w_qry = random.stream(6).uniform_tensor<double, 3>({heads, c_in, d_k});
  const xt::xtensor<double, 3> w_key = random.stream(7).uniform_tensor<double, 3>({heads, c_in, d_k});
  const Image<double> x = random.stream(8).uniform_tensor<double, 3>({c_in, H, W});

  // As documented: Delta = mu, A = 1/2 S S^T.
  xt::xarray<double> precisions = xt::zeros<double>({heads, std::size_t(2), std::size_t(2)});
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t j = 0; j < 2; ++j)
        for (std::size_t k = 0; k < 2; ++k) precisions(h, i, j) += 0.5 * spread(h, i, k) * spread(h, j, k);
  const Case c = nearest_case(dir.path,
                              {{"image", {H, W}}, {"in_channels", c_in}, {"out_channels", c_out}, {"heads", heads},
                               {"head_dim", d_h}, {"key_dim", d_k}, {"kernel", {3, 3}}},
                              {{"centers", mu}, {"precisions", precisions}, {"w_val", w_val}, {"w_out", w_out},
                               {"b_out", b_out}, {"w_qry", w_qry}, {"w_key", w_key}, {"input", x}});
  const Outcome out = find_proof(proof_id)->verify(c);

  // Eq. 8 written from epfml's score R . t_h, R = (d1, d2, d1^2, d2^2, d1 d2) and
  // t_h = -1/2 (-2(a mu1 + b mu2), -2(c mu2 + b mu1), a, c, 2b) (models/bert.py,
  // get_heads_target_vectors), reordered into quadratic_general's r = (d1^2, d2^2, d1 d2, d1, d2).
  MhsaLayer<double> eq8{.encoding = Encoding::quadratic_general, .heads = {}, .w_out = w_out, .b_out = b_out};
  for (std::size_t h = 0; h < heads; ++h) {
    const double a = 2 * precisions(h, 0, 0), b = 2 * precisions(h, 0, 1), cc = 2 * precisions(h, 1, 1);
    const double t[5] = {-0.5 * -2 * (a * mu(h, 0) + b * mu(h, 1)), -0.5 * -2 * (cc * mu(h, 1) + b * mu(h, 0)),
                         -0.5 * a, -0.5 * cc, -0.5 * 2 * b};
    AttentionHead<double> head{.w_qry = xt::zeros<double>({c_in, d_k + 1}), .w_key = xt::zeros<double>({c_in, d_k + 1}),
                               .w_key_hat = xt::zeros<double>({d_k + 1, std::size_t(5)}),
                               .u = xt::zeros<double>({d_k + 1}), .v = xt::zeros<double>({d_k + 1}),
                               .w_val = xt::view(w_val, h)};
    xt::view(head.w_qry, xt::all(), xt::range(0, d_k)) = xt::view(w_qry, h);
    xt::view(head.w_key, xt::all(), xt::range(0, d_k)) = xt::view(w_key, h);
    const double reordered[5] = {t[2], t[3], t[4], t[0], t[1]};
    for (std::size_t d = 0; d < 5; ++d) head.w_key_hat(d_k, d) = reordered[d];
    head.v(d_k) = 1;
    eq8.heads.push_back(head);
  }
  const Matrix<double> tokens = image_to_tokens(x);
  const Image<double> dense = tokens_to_image(mhsa_dense(eq8, tokens, H, W), H, W);
  CHECK(max_difference(tensor(out, "actual"), dense) < 1e-13);
  // The dense engine against the plain Eq. 8 loops of the reference, on every pixel.
  const xt::xtensor<long double, 2> truth = reference::mhsa(eq8, tokens, H, W);
  CHECK(max_difference(tokens_to_image(Matrix<double>(xt::cast<double>(truth)), H, W), dense) < 1e-13);
  CHECK(out.metrics["content_share"].get<double>() > 0.01);

  // Isotropic heads: alpha = s^2 / 2 is the precision s^2 / 2 I.
  ScratchDir iso_dir("nc_epfml_iso");
  const Vector<double> s = xt::view(spread, xt::all(), 0, 0);
  xt::xarray<double> iso = xt::zeros<double>({heads, std::size_t(2), std::size_t(2)});
  for (std::size_t h = 0; h < heads; ++h) iso(h, 0, 0) = iso(h, 1, 1) = s(h) * s(h) / 2;
  json params = c.params;
  params["key_dim"] = 0;
  const Outcome by_alpha = find_proof(proof_id)->verify(nearest_case(
      iso_dir.path, params,
      {{"centers", mu}, {"alphas", s * s / 2.0}, {"w_val", w_val}, {"w_out", w_out}, {"b_out", b_out}, {"input", x}}));
  const Outcome by_precision = find_proof(proof_id)->verify(nearest_case(
      iso_dir.path, params,
      {{"centers", mu}, {"precisions", iso}, {"w_val", w_val}, {"w_out", w_out}, {"b_out", b_out}, {"input", x}}));
  CHECK(max_difference(tensor(by_alpha, "actual"), tensor(by_precision, "actual")) == 0);
  CHECK_FALSE(by_alpha.metrics.contains("content_share"));
}

TEST_CASE("A precision that is not positive semi-definite is refused before anything runs (exit 2)",
          "[nearest_convolution]") {
  ScratchDir dir("nc_bad");
  xt::xarray<double> precisions = xt::zeros<double>({1, 2, 2});
  precisions(0, 0, 0) = 1, precisions(0, 1, 1) = -0.5;
  xt::dump_npy((dir.path / "precisions.npy").string(), precisions);
  testing::write_text(dir.path / "bad.json",
                      json({{"cases",
                             {{{"name", "bad-precision"}, {"proof", proof_id},
                               {"params", {{"image", 5}, {"in_channels", 1}, {"out_channels", 1}, {"heads", 1},
                                           {"head_dim", 1}}},
                               {"weights", {{"precisions", "precisions.npy"}}}}}}})
                          .dump());
  const auto result = testing::run_cli("run '" + (dir.path / "bad.json").string() + "' --out '" +
                                       (dir.path / "out").string() + "' --quiet");
  CHECK(result.code == 2);
  CHECK_THAT(result.output, Catch::Contains("bad.json: case 'bad-precision': key 'weights.precisions': head 0's "
                                            "precision is not positive semi-definite"));
  CHECK_FALSE(fs::exists(dir.path / "out" / "report.json"));
}

TEST_CASE("nearest_convolution refuses a window that does not fit, a bad kernel and two kinds of precision",
          "[nearest_convolution]") {
  const auto load = [](const std::string& params) {
    return load_case_text(R"({"cases": [{"name": "k", "proof": "cordonnier2020.nearest_convolution", "params": )" +
                              params + "}]}",
                          "k.json");
  };
  const std::string sizes = R"("image": [4, 5], "in_channels": 1, "out_channels": 1, "heads": 2, "head_dim": 1)";
  CHECK_THROWS_WITH(load("{" + sizes + R"(, "kernel": [5, 3]})"),
                    Catch::Contains("key 'params.kernel': the 5x3 window must fit the 4x5 image"));
  CHECK_THROWS_WITH(load("{" + sizes + R"(, "kernel": "big"})"),
                    Catch::Contains("must be \"auto\", an integer or a pair of integers"));
  const Case automatic = load("{" + sizes + "}").at(0);
  CHECK(automatic.params["kernel"] == "auto");
  // A_h from the alpha parameter: neither precisions nor alphas is "drawn from the seed".
  CHECK_FALSE(automatic.provenance.contains("precisions"));
  CHECK_FALSE(automatic.provenance.contains("alphas"));
  CHECK(automatic.provenance.contains("centers"));

  ScratchDir dir("nc_both");
  xt::dump_npy((dir.path / "p.npy").string(), xt::xarray<double>(xt::zeros<double>({2, 2, 2})));
  xt::dump_npy((dir.path / "a.npy").string(), xt::xarray<double>(xt::ones<double>({2})));
  testing::write_text(dir.path / "both.json",
                      R"({"cases": [{"name": "both", "proof": "cordonnier2020.nearest_convolution", "params": {)" +
                          sizes + R"(}, "weights": {"precisions": "p.npy", "alphas": "a.npy"}}]})");
  CHECK_THROWS_WITH(load_case_file((dir.path / "both.json").string()),
                    Catch::Contains("key 'weights.alphas': give either precisions"));
}

TEST_CASE("plot draws the trained layer's own heads, from the tensors its case loaded", "[nearest_convolution]") {
  ScratchDir dir("nc_plot");
  const std::string cases = std::string(ATTNCONV_SOURCE_DIR) + "/cases/nearest_convolution.json";
  const auto ran = testing::run_cli("run '" + cases + "' --filter nc-trained-3x3 --out '" + (dir.path / "r").string() +
                                    "' --quiet");
  REQUIRE(ran.code == 0);
  const json report = json::parse(testing::read_text(dir.path / "r" / "report.json"));
  const json& metrics = report["cases"][0]["metrics"];
  PlotOptions options;
  options.out_dir = (dir.path / "fig").string();
  options.gnuplot = "true";  // writes the .dat and .gp files; draws nothing
  plot_report(report, options);
  const std::string script = testing::read_text(dir.path / "fig" / "attention-nc-trained-3x3.gp");
  // The trained centres (tests/fixtures/nearest_convolution/trained/centers.npy), not seeded ones.
  CHECK(metrics["tap"][0] == json({1, 0}));
  CHECK_THAT(script, Catch::Contains("head 0: (1, 0), 0.21 px"));
  CHECK_THAT(script, Catch::Contains("head 8: (-1, 0), 0.567 px"));
}

TEST_CASE("Gaussian-attention layers through run_mhsa (auto) agree with the plain Eq. 8 loops, over samples",
          "[nearest_convolution]") {
  for (std::uint64_t seed = 0; seed < 24; ++seed) {
    Random random(100 + seed);
    const std::size_t heads = 1 + seed % 4, c_in = 1 + seed % 3, d_h = 1 + seed % 2, c_out = 1 + (seed / 2) % 3;
    const std::size_t h = 2 + seed % 5, w = 3 + seed % 4;
    GaussianAttention<double> g;
    g.centers = random.stream(1).uniform_tensor<double, 2>({heads, 2}) * 3.0;
    // A = B B^T (PSD); every third sample isotropic (a12 = 0: auto may take the separable engine).
    const xt::xtensor<double, 3> b = random.stream(2).uniform_tensor<double, 3>({heads, 2, 2}) * 2.0;
    g.precisions = xt::zeros<double>({heads, std::size_t(2), std::size_t(2)});
    for (std::size_t k = 0; k < heads; ++k)
      for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 2; ++j)
          g.precisions(k, i, j) = seed % 3 == 0 ? (i == j ? b(k, 0, 0) * b(k, 0, 0) : 0.0)
                                                : b(k, i, 0) * b(k, j, 0) + b(k, i, 1) * b(k, j, 1);
    g.w_val = random.stream(3).uniform_tensor<double, 3>({heads, c_in, d_h});
    g.w_out = random.stream(4).uniform_tensor<double, 2>({heads * d_h, c_out});
    g.b_out = random.stream(5).uniform_tensor<double, 1>({c_out});
    if (seed % 2) {
      g.w_qry = random.stream(6).uniform_tensor<double, 3>({heads, c_in, 2});
      g.w_key = random.stream(7).uniform_tensor<double, 3>({heads, c_in, 2});
    }
    const MhsaLayer<double> layer = to_mhsa_layer(g);
    const Matrix<double> tokens = random.stream(8).uniform_tensor<double, 2>({h * w, c_in});
    const Matrix<double> fast = run_mhsa(Engine::auto_, layer, tokens, h, w).y;
    const xt::xtensor<long double, 2> truth = reference::mhsa(layer, tokens, h, w);
    const double scale = std::max(1.0, double(xt::amax(xt::abs(truth))()));
    INFO("seed " << seed);
    CHECK(max_difference(fast, xt::cast<double>(truth)) <= 1e-12 * scale);
  }
}
