// The ACmix module: pinned against every PyTorch fixture in tests/fixtures/acmix
// (attention path, convolution path, output, float64, 1e-12 relative), and its
// identities over generated configurations.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <xtensor/xview.hpp>

#include "acmix/equivalent_kernel.hpp"
#include "acmix/random_weights.hpp"
#include "acmix/state_dict.hpp"
#include "acmix/window_attention_loop.hpp"
#include "metrics/compare.hpp"
#include "torch_fixtures.hpp"

using namespace attnconv;

namespace {

// max |actual - expected| relative to max |expected|.
template <class A, class E> double relative_max(const A& actual, const E& expected) {
  const double scale = double(xt::amax(xt::abs(expected))());
  return compare(actual, expected).max_abs / (scale > 0 ? scale : 1.0);
}

struct Fixture {
  AcmixConfig config;
  Image<double> input;
  AcmixWeights<double> weights;
  Image<double> attention, convolution, output;
};

Fixture load_fixture(const testing::TorchFixture& fixture) {
  const nlohmann::json& entry = fixture.entry;
  Fixture f;
  f.config.in_channels = entry["in_channels"], f.config.out_channels = entry["out_channels"];
  f.config.heads = entry["heads"], f.config.kernel_att = entry["kernel_att"];
  f.config.kernel_conv = entry["kernel_conv"], f.config.stride = entry["stride"];
  std::map<std::string, xt::xarray<double>> tensors;
  for (const auto& e : acmix_state_dict_entries(f.config, entry["dep_conv_bias"].get<bool>()))
    tensors[e.key] = fixture.load(e.key);
  f.weights = acmix_weights_from(f.config, tensors);
  f.input = fixture.load("input");
  f.attention = fixture.load("attention_path");
  f.convolution = fixture.load("conv_path");
  f.output = fixture.load("output");
  return f;
}

}  // namespace

TEST_CASE("ACmix module matches every PyTorch fixture", "[acmix_module]") {
  const auto fixtures = testing::torch_fixtures("acmix");
  REQUIRE(fixtures.size() == 9);
  for (const auto& fixture : fixtures) {
    INFO("fixture " << fixture.name());
    const Fixture f = load_fixture(fixture);
    OpCounter counter;
    const AcmixOutput<double> out = acmix_forward(f.config, f.weights, f.input, counter);
    REQUIRE(out.output.shape() == f.output.shape());
    CHECK(relative_max(out.attention, f.attention) < 1e-12);
    CHECK(relative_max(out.convolution, f.convolution) < 1e-12);
    CHECK(relative_max(out.output, f.output) < 1e-12);
    // The independent loop and the derived convolution agree with PyTorch too.
    CHECK(relative_max(window_attention_loop(f.config, f.weights, f.input), f.attention) < 1e-12);
    const EquivalentConv<double> eq = conv_path_equivalent(f.config, f.weights);
    const Image<double> by_kernel =
        conv2d_blocked(append_ones_channel(f.input), eq.weight, std::optional<Vector<double>>(eq.bias), eq.geometry);
    CHECK(relative_max(by_kernel, f.convolution) < 1e-12);
  }
}

namespace {
struct ModuleConfig {
  AcmixConfig config;
  std::array<int, 2> image;
  std::string dep_init;
  bool projection_bias;
};
}  // namespace

TEST_CASE("ACmix identities over generated configurations", "[acmix_module]") {
  const ModuleConfig m = GENERATE(ModuleConfig{{4, 4, 1, 3, 3, 1}, {7, 9}, "shift", true},
                                  ModuleConfig{{5, 6, 2, 3, 5, 1}, {9, 7}, "random", true},
                                  ModuleConfig{{4, 8, 4, 7, 7, 2}, {9, 11}, "random", true},
                                  ModuleConfig{{6, 6, 3, 5, 3, 2}, {7, 7}, "shift", true},
                                  ModuleConfig{{3, 4, 2, 3, 5, 3}, {10, 8}, "random", true},
                                  ModuleConfig{{4, 6, 2, 3, 3, 1}, {6, 6}, "random", false},
                                  ModuleConfig{{2, 2, 1, 1, 1, 1}, {3, 4}, "shift", true},
                                  ModuleConfig{{3, 4, 1, 3, 7, 2}, {5, 5}, "random", true});
  INFO("C_in " << m.config.in_channels << " C_out " << m.config.out_channels << " N " << m.config.heads << " k_att "
               << m.config.kernel_att << " k_conv " << m.config.kernel_conv << " s " << m.config.stride);
  AcmixInit init;
  init.dep_init = m.dep_init, init.projection_bias = m.projection_bias, init.rates = {0.7, -1.3};
  const Random random(23);
  const AcmixWeights<double> w = random_acmix_weights<double>(m.config, init, random);
  const Image<double> x = random.stream(purpose_id("input"))
                              .uniform_tensor<double, 3>({std::size_t(m.config.in_channels), std::size_t(m.image[0]),
                                                          std::size_t(m.image[1])});
  OpCounter counter;
  const AcmixOutput<double> out = acmix_forward(m.config, w, x, counter);
  const std::size_t h_out = std::size_t((m.image[0] + m.config.stride - 1) / m.config.stride);
  const std::size_t w_out = std::size_t((m.image[1] + m.config.stride - 1) / m.config.stride);
  REQUIRE(out.output.shape() == std::array<std::size_t, 3>{std::size_t(m.config.out_channels), h_out, w_out});

  // The convolution path is a standard convolution of [x; 1] with the derived kernel.
  const EquivalentConv<double> eq = conv_path_equivalent(m.config, w);
  const Image<double> expected =
      conv2d_blocked(append_ones_channel(x), eq.weight, std::optional<Vector<double>>(eq.bias), eq.geometry);
  CHECK(relative_max(out.convolution, expected) < 1e-12);

  // The attention path equals the independent loop.
  CHECK(relative_max(out.attention, window_attention_loop(m.config, w, x)) < 1e-12);
  CHECK(relative_max(out.output, Image<double>(w.rate1 * out.attention + w.rate2 * out.convolution)) < 1e-15);

  // Against the plain biased convolution: equal inside, different in the border band iff Stage I has biases.
  const EquivalentConv<double> plain = plain_conv_of(eq);
  const Image<double> plain_out = conv2d_blocked(x, plain.weight, std::optional<Vector<double>>(plain.bias), plain.geometry);
  const auto rows = interior_range(m.image[0], m.config.kernel_conv, m.config.stride);
  const auto cols = interior_range(m.image[1], m.config.kernel_conv, m.config.stride);
  double border = 0, interior = 0;
  for (std::size_t o = 0; o < plain_out.shape(0); ++o)
    for (int i = 0; i < int(h_out); ++i)
      for (int j = 0; j < int(w_out); ++j) {
        const double difference = std::abs(plain_out(o, i, j) - out.convolution(o, i, j));
        const bool inside = i >= rows[0] && i <= rows[1] && j >= cols[0] && j <= cols[1];
        (inside ? interior : border) = std::max(inside ? interior : border, difference);
      }
  CHECK(interior < 1e-12 * double(xt::amax(xt::abs(plain_out))()));
  if (m.config.kernel_conv == 1)
    CHECK(border == 0.0);  // no band at all
  else if (m.projection_bias)
    CHECK(border > 1e-3);
  else
    CHECK(border < 1e-12 * double(xt::amax(xt::abs(plain_out))()));
}

TEST_CASE("rates [0, 1] and [1, 0] give one path alone", "[acmix_module]") {
  const AcmixConfig config{4, 4, 2, 3, 3, 1};
  const std::array<double, 2> rates = GENERATE(std::array<double, 2>{0, 1}, std::array<double, 2>{1, 0});
  AcmixInit init;
  init.rates = rates, init.dep_init = "random";
  const AcmixWeights<double> w = random_acmix_weights<double>(config, init, Random(3));
  const Image<double> x = Random(4).uniform_tensor<double, 3>({4, 6, 5});
  OpCounter counter;
  const AcmixOutput<double> out = acmix_forward(config, w, x, counter);
  CHECK(compare(out.output, rates[0] == 0 ? out.convolution : out.attention).max_abs == 0.0);
}

TEST_CASE("the reference's shift init makes the conv path's N channels of a group equal", "[acmix_module]") {
  const AcmixConfig config{5, 8, 4, 3, 5, 1};
  const AcmixWeights<double> w = random_acmix_weights<double>(config, AcmixInit{}, Random(8));
  const Image<double> x = Random(9).uniform_tensor<double, 3>({5, 7, 6});
  OpCounter counter;
  const Image<double> conv = acmix_forward(config, w, x, counter).convolution;
  for (int o = 0; o < 8; ++o)  // output channel o reads head_dim index o // N
    CHECK(compare(xt::view(conv, o, xt::all(), xt::all()), xt::view(conv, (o / 4) * 4, xt::all(), xt::all())).max_abs == 0.0);
}

TEST_CASE("position map follows torch.linspace", "[acmix_module]") {
  const Image<double> loc = position_map<double>(5, 4);
  CHECK(loc(0, 2, 0) == -1.0);
  CHECK(loc(0, 2, 3) == 1.0);
  CHECK(loc(1, 0, 1) == -1.0);
  CHECK(loc(1, 4, 1) == 1.0);
  CHECK(loc(1, 2, 3) == 0.0);
  CHECK(loc(0, 1, 1) == Approx(-1.0 / 3).epsilon(1e-15));
  CHECK(position_map<double>(1, 1)(0, 0, 0) == -1.0);
}
