// The textbook reference::conv1d and the fast conv1d_blocked (conv2d_blocked
// on a 1 x L image) against PyTorch's F.conv1d fixtures (tests/fixtures/conv1d,
// made by make_fixtures.py).
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <xtensor/xnpy.hpp>

#include "metrics/compare.hpp"
#include "ops/conv1d_blocked.hpp"
#include "reference/conv.hpp"
#include "torch_fixtures.hpp"

using namespace attnconv;

TEST_CASE("reference::conv1d and conv1d_blocked match PyTorch's conv1d fixtures", "[conv1d]") {
  const auto fixtures = testing::torch_fixtures("conv1d");
  REQUIRE(fixtures.size() == 9);
  int grouped = 0;
  for (const auto& fixture : fixtures) {
    const nlohmann::json& m = fixture.entry;
    INFO(m.dump());
    const Sequence<double> x = fixture.load("input");
    const Kernel1d<double> w = fixture.load("weight");
    const Vector<double> b = fixture.load("bias");
    const Sequence<double> y = fixture.load("output");
    Conv1dGeometry g;
    g.pad_left = m["padding"][0], g.pad_right = m["padding"][1];
    g.padding_mode = padding_mode_from_string(m["padding_mode"]);
    g.stride = m["stride"], g.dilation = m["dilation"];
    g.groups = m.at("groups").get<int>();
    grouped += g.groups > 1;
    const auto bias = m["bias"].get<bool>() ? std::optional<Vector<double>>(b) : std::nullopt;
    for (const Sequence<double>& out : {reference::conv1d(x, w, bias, g), conv1d_blocked(x, w, bias, g)}) {
      REQUIRE(out.shape() == y.shape());
      CHECK(compare(out, y).max_abs <= 1e-12);
    }
  }
  CHECK(grouped == 3);  // groups 2, depthwise, depthwise with a channel multiplier of 2
}

TEST_CASE("a sequence is a 1 x L image and back", "[conv1d]") {
  const Sequence<double> x = {{1, 2, 3}, {4, 5, 6}};
  const Image<double> image = as_image(x);
  CHECK(image.shape(1) == 1);
  CHECK(image(1, 0, 2) == 6);
  const bool same = as_sequence(image) == x;
  CHECK(same);
}
