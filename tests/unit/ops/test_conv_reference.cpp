// The ground truth, pinned: reference::conv2d and pad() against values computed
// by hand (derivations in the comments), and reference::conv2d and the fast
// conv2d_blocked and conv2d_gemm against every PyTorch fixture in tests/fixtures/conv2d
// (F.pad + F.conv2d, float64).
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <xtensor/xmath.hpp>
#include <xtensor/xnpy.hpp>
#include <xtensor/xview.hpp>

#include "metrics/compare.hpp"
#include "ops/conv2d_blocked.hpp"
#include "ops/conv2d_gemm.hpp"
#include "reference/conv.hpp"
#include "torch_fixtures.hpp"

namespace {

using namespace attnconv;

const std::optional<Vector<double>> no_bias;

// x = [[1, 2, 3],
//      [4, 5, 6],
//      [7, 8, 9]]   (one channel, 3 x 3)
Image<double> x3() {
  Image<double> x({1, 3, 3});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) x(0, i, j) = 3 * i + j + 1;
  return x;
}

// w = [[1, 2],
//      [3, 4]]      (one output, one input channel, 2 x 2)
// so that y[i, j] = xpad[i, j] + 2 xpad[i, j+1] + 3 xpad[i+1, j] + 4 xpad[i+1, j+1].
Kernel<double> w2() {
  Kernel<double> w({1, 1, 2, 2});
  w(0, 0, 0, 0) = 1, w(0, 0, 0, 1) = 2, w(0, 0, 1, 0) = 3, w(0, 0, 1, 1) = 4;
  return w;
}

Image<double> one_channel(std::initializer_list<std::initializer_list<double>> rows) {
  const xt::xtensor<double, 2> m(rows);
  Image<double> y({1, m.shape(0), m.shape(1)});
  for (std::size_t i = 0; i < m.shape(0); ++i)
    for (std::size_t j = 0; j < m.shape(1); ++j) y(0, i, j) = m(i, j);
  return y;
}

ConvGeometry geometry(Padding padding, PaddingMode mode = PaddingMode::zeros, std::array<int, 2> stride = {1, 1},
                      std::array<int, 2> dilation = {1, 1}) {
  ConvGeometry g;
  g.padding = padding;
  g.padding_mode = mode;
  g.stride = stride;
  g.dilation = dilation;
  return g;
}

template <class A, class B> void require_exact(const A& actual, const B& expected) {
  REQUIRE(actual.shape() == expected.shape());
  CHECK(actual == expected);
}

}  // namespace

TEST_CASE("reference::conv2d: 3x3 input, 2x2 kernel, no padding", "[conv_reference]") {
  // y[0,0] = 1*1 + 2*2 + 3*4 + 4*5 = 37    y[0,1] = 1*2 + 2*3 + 3*5 + 4*6 = 47
  // y[1,0] = 1*4 + 2*5 + 3*7 + 4*8 = 67    y[1,1] = 1*5 + 2*6 + 3*8 + 4*9 = 77
  require_exact(reference::conv2d(x3(), w2(), no_bias, geometry({})), one_channel({{37, 47}, {67, 77}}));
}

TEST_CASE("reference::conv2d: bias is added to every output pixel", "[conv_reference]") {
  const std::optional<Vector<double>> bias = Vector<double>{0.5};
  require_exact(reference::conv2d(x3(), w2(), bias, geometry({})), one_channel({{37.5, 47.5}, {67.5, 77.5}}));
}

TEST_CASE("reference::conv2d: float32 gives the same exact integers", "[conv_reference]") {
  const Image<float> x = xt::cast<float>(x3());
  const Kernel<float> w = xt::cast<float>(w2());
  const Image<float> expected = xt::cast<float>(one_channel({{37, 47}, {67, 77}}));
  require_exact(reference::conv2d(x, w, std::optional<Vector<float>>(), geometry({})), expected);
}

TEST_CASE("reference::conv2d: padding 1 in each mode", "[conv_reference]") {
  const Padding one{1, 1, 1, 1};
  SECTION("zeros") {
    // xpad = 0 0 0 0 0      y[0,0] = 4*1 = 4         y[0,3] = 3*3 = 9
    //        0 1 2 3 0      y[1,0] = 2*1 + 4*4 = 18  y[1,3] = 1*3 + 3*6 = 21
    //        0 4 5 6 0      y[2,0] = 2*4 + 4*7 = 36  y[2,3] = 1*6 + 3*9 = 33
    //        0 7 8 9 0      y[3,0] = 2*7 = 14        y[3,3] = 1*9 = 9
    //        0 0 0 0 0      the inner 2x2 is the unpadded 37 47 / 67 77
    require_exact(reference::conv2d(x3(), w2(), no_bias, geometry(one, PaddingMode::zeros)),
                  one_channel({{4, 11, 18, 9}, {18, 37, 47, 21}, {36, 67, 77, 33}, {14, 23, 26, 9}}));
  }
  SECTION("reflect") {
    // rows/cols -1 -> 1 and 3 -> 1 (mirror without the edge):
    // xpad = 5 4 5 6 5      y[0,0] = 5 + 2*4 + 3*2 + 4*1 = 23
    //        2 1 2 3 2      y[0,3] = 6 + 2*5 + 3*3 + 4*2 = 33
    //        5 4 5 6 5      y[3,0] = 8 + 2*7 + 3*5 + 4*4 = 53
    //        8 7 8 9 8      y[3,3] = 9 + 2*8 + 3*6 + 4*5 = 63
    //        5 4 5 6 5
    require_exact(reference::conv2d(x3(), w2(), no_bias, geometry(one, PaddingMode::reflect)),
                  one_channel({{23, 25, 35, 33}, {35, 37, 47, 45}, {65, 67, 77, 75}, {53, 55, 65, 63}}));
  }
  SECTION("replicate") {
    // xpad = 1 1 2 3 3      y[0,0] = 1 + 2*1 + 3*1 + 4*1 = 10
    //        1 1 2 3 3      y[0,3] = 3 + 2*3 + 3*3 + 4*3 = 30
    //        4 4 5 6 6      y[1,3] = 3 + 2*3 + 3*6 + 4*6 = 51
    //        7 7 8 9 9      y[3,3] = 9 + 2*9 + 3*9 + 4*9 = 90
    //        7 7 8 9 9
    require_exact(reference::conv2d(x3(), w2(), no_bias, geometry(one, PaddingMode::replicate)),
                  one_channel({{10, 16, 26, 30}, {31, 37, 47, 51}, {61, 67, 77, 81}, {70, 76, 86, 90}}));
  }
  SECTION("circular") {
    // rows/cols -1 -> 2 and 3 -> 0 (wrap around):
    // xpad = 9 7 8 9 7      y[0,0] = 9 + 2*7 + 3*3 + 4*1 = 36
    //        3 1 2 3 1      y[0,1] = 7 + 2*8 + 3*1 + 4*2 = 34
    //        6 4 5 6 4      y[1,0] = 3 + 2*1 + 3*6 + 4*4 = 39
    //        9 7 8 9 7      y[2,0] = 6 + 2*4 + 3*9 + 4*7 = 69
    //        3 1 2 3 1      row 3 reads rows 3, 4 = rows 0, 1: same as row 0
    require_exact(reference::conv2d(x3(), w2(), no_bias, geometry(one, PaddingMode::circular)),
                  one_channel({{36, 34, 44, 36}, {39, 37, 47, 39}, {69, 67, 77, 69}, {36, 34, 44, 36}}));
  }
}

TEST_CASE("reference::conv2d: stride 2 subsamples the stride-1 output", "[conv_reference]") {
  // H_out = (3 + 2 - 1 - 1) // 2 + 1 = 2: rows/cols 0 and 2 of the zero-padded
  // stride-1 output above: [[4, 18], [36, 77]].
  require_exact(reference::conv2d(x3(), w2(), no_bias, geometry({1, 1, 1, 1}, PaddingMode::zeros, {2, 2})),
                one_channel({{4, 18}, {36, 77}}));
  // stride (1, 2): rows 0..3, cols 0 and 2.
  require_exact(reference::conv2d(x3(), w2(), no_bias, geometry({1, 1, 1, 1}, PaddingMode::zeros, {1, 2})),
                one_channel({{4, 18}, {18, 47}, {36, 77}, {14, 26}}));
}

TEST_CASE("reference::conv2d: dilation 2", "[conv_reference]") {
  // receptive field 3 = the whole image: y = 1*x[0,0] + 2*x[0,2] + 3*x[2,0] + 4*x[2,2]
  //                                        = 1 + 6 + 21 + 36 = 64
  require_exact(reference::conv2d(x3(), w2(), no_bias, geometry({}, PaddingMode::zeros, {1, 1}, {2, 2})),
                one_channel({{64}}));
  // dilation (2, 1): y[0,j] = x[0,j] + 2 x[0,j+1] + 3 x[2,j] + 4 x[2,j+1]
  //   j = 0: 1 + 4 + 21 + 32 = 58;  j = 1: 2 + 6 + 24 + 36 = 68
  require_exact(reference::conv2d(x3(), w2(), no_bias, geometry({}, PaddingMode::zeros, {1, 1}, {2, 1})),
                one_channel({{58, 68}}));
}

TEST_CASE("reference::conv2d: non-square kernels", "[conv_reference]") {
  Kernel<double> row = xt::zeros<double>({1, 1, 1, 3});  // [1, 0, -1]: y[i, 0] = x[i, 0] - x[i, 2] = -2
  row(0, 0, 0, 0) = 1, row(0, 0, 0, 2) = -1;
  require_exact(reference::conv2d(x3(), row, no_bias, geometry({})), one_channel({{-2}, {-2}, {-2}}));
  Kernel<double> column = xt::zeros<double>({1, 1, 3, 1});  // [1; 0; -1]: y[0, j] = x[0, j] - x[2, j] = -6
  column(0, 0, 0, 0) = 1, column(0, 0, 2, 0) = -1;
  require_exact(reference::conv2d(x3(), column, no_bias, geometry({})), one_channel({{-6, -6, -6}}));
}

TEST_CASE("reference::conv2d: channels are summed per output channel", "[conv_reference]") {
  // input channel 0 = x, channel 1 = all ones.
  Image<double> x({2, 3, 3});
  xt::view(x, 0) = xt::view(x3(), 0);
  xt::view(x, 1) = xt::ones<double>({3, 3});
  // out 0: w2 on channel 0 plus a box of ones on channel 1 -> 37 + 4 ...
  // out 1: nothing on channel 0, -1 at (1, 1) on channel 1 -> -1 everywhere, + bias 2 -> 1
  Kernel<double> w = xt::zeros<double>({2, 2, 2, 2});
  xt::view(w, 0, 0) = xt::view(w2(), 0, 0);
  xt::view(w, 0, 1) = xt::ones<double>({2, 2});
  w(1, 1, 1, 1) = -1;
  const std::optional<Vector<double>> bias = Vector<double>{0, 2};
  const Image<double> y = reference::conv2d(x, w, bias, geometry({}));
  Image<double> expected({2, 2, 2});
  xt::view(expected, 0) = xt::xtensor<double, 2>{{41, 51}, {71, 81}};
  xt::view(expected, 1) = xt::ones<double>({2, 2});
  require_exact(y, expected);
}

TEST_CASE("conv_output_size follows the PyTorch formula", "[conv_reference]") {
  CHECK(conv_output_size(3, 0, 0, 2, 1, 1) == 2);
  CHECK(conv_output_size(3, 1, 1, 2, 2, 1) == 2);  // (3 + 2 - 1 - 1) // 2 + 1
  CHECK(conv_output_size(9, 2, 2, 3, 2, 2) == 5);  // (9 + 4 - 4 - 1) // 2 + 1
  CHECK(conv_output_size(8, 1, 0, 2, 3, 1) == 3);  // (8 + 1 - 1 - 1) // 3 + 1
  CHECK(conv_output_size(3, 0, 0, 2, 1, 3) == 0);  // receptive field 4 > 3
  CHECK_THROWS_AS(reference::conv2d(x3(), w2(), no_bias, geometry({}, PaddingMode::zeros, {1, 1}, {3, 3})),
                  std::invalid_argument);
}

TEST_CASE("reference::conv2d: groups split the channels", "[conv_reference]") {
  // Two input channels x3() and 10 x3(); groups = 2, two outputs, kernel w2()
  // and 2 w2(): output 0 reads only channel 0, output 1 only channel 1, so
  // y[1] = 2 * 10 * y_one_channel = 20 [[37, 47], [67, 77]].
  Image<double> x({2, 3, 3});
  xt::view(x, 0) = xt::view(x3(), 0);
  xt::view(x, 1) = 10.0 * xt::view(x3(), 0);
  Kernel<double> w({2, 1, 2, 2});
  xt::view(w, 0) = xt::view(w2(), 0);
  xt::view(w, 1) = 2.0 * xt::view(w2(), 0);
  Image<double> expected({2, 2, 2});
  xt::view(expected, 0) = xt::view(one_channel({{37, 47}, {67, 77}}), 0);
  xt::view(expected, 1) = xt::view(one_channel({{740, 940}, {1340, 1540}}), 0);
  ConvGeometry g = geometry({});
  g.groups = 2;
  require_exact(reference::conv2d(x, w, no_bias, g), expected);
  g.groups = 3;
  CHECK_THROWS_AS(reference::conv2d(x, w, no_bias, g), std::invalid_argument);
  // The same two channels as a sequence (the first rows), groups = 2, kernel 1 x 2.
  const Sequence<double> s = xt::view(x, xt::all(), 0, xt::all());
  const Kernel1d<double> w1 = xt::view(w, xt::all(), xt::all(), 0, xt::all());
  Conv1dGeometry g1;
  g1.groups = 2;
  const Sequence<double> y1 = reference::conv1d(s, w1, no_bias, g1);
  REQUIRE(y1.shape(0) == 2);
  CHECK(y1(0, 0) == double(w(0, 0, 0, 0) * x(0, 0, 0) + w(0, 0, 0, 1) * x(0, 0, 1)));
  CHECK(y1(1, 1) == double(w(1, 0, 0, 0) * x(1, 0, 1) + w(1, 0, 0, 1) * x(1, 0, 2)));
  g1.groups = 3;
  CHECK_THROWS_AS(reference::conv1d(s, w1, no_bias, g1), std::invalid_argument);
}

TEST_CASE("same_padding: PyTorch's split, the extra one bottom/right", "[conv_reference]") {
  const auto check = [](Padding p, Padding q) {
    CHECK(p.top == q.top);
    CHECK(p.bottom == q.bottom);
    CHECK(p.left == q.left);
    CHECK(p.right == q.right);
  };
  check(same_padding({3, 3}, {1, 1}), {1, 1, 1, 1});
  check(same_padding({2, 2}, {1, 1}), {0, 1, 0, 1});   // fixture k2x2-same
  check(same_padding({4, 4}, {2, 1}), {3, 3, 1, 2});   // fixture k4x4-same-dil2: totals 6 and 3
  check(same_padding({5, 2}, {1, 3}), {2, 2, 1, 2});   // fixture k5x2-dil1x3-replicate-same
  check(same_padding({1, 1}, {2, 2}), {0, 0, 0, 0});
}

TEST_CASE("pad: each mode against hand values", "[conv_reference]") {
  // x = [[1, 2, 3], [4, 5, 6]] (2 x 3), padding top 1, bottom 1, left 2, right 1 -> 4 x 6.
  const Image<double> x = one_channel({{1, 2, 3}, {4, 5, 6}});
  const Padding p{1, 1, 2, 1};
  SECTION("zeros") {
    require_exact(pad(x, p, PaddingMode::zeros),
                  one_channel({{0, 0, 0, 0, 0, 0}, {0, 0, 1, 2, 3, 0}, {0, 0, 4, 5, 6, 0}, {0, 0, 0, 0, 0, 0}}));
  }
  SECTION("reflect") {
    // columns -2, -1, 0, 1, 2, 3 -> 2, 1, 0, 1, 2, 1; rows -1, 0, 1, 2 -> 1, 0, 1, 0
    require_exact(pad(x, p, PaddingMode::reflect),
                  one_channel({{6, 5, 4, 5, 6, 5}, {3, 2, 1, 2, 3, 2}, {6, 5, 4, 5, 6, 5}, {3, 2, 1, 2, 3, 2}}));
  }
  SECTION("replicate") {
    // columns -> 0, 0, 0, 1, 2, 2; rows -> 0, 0, 1, 1
    require_exact(pad(x, p, PaddingMode::replicate),
                  one_channel({{1, 1, 1, 2, 3, 3}, {1, 1, 1, 2, 3, 3}, {4, 4, 4, 5, 6, 6}, {4, 4, 4, 5, 6, 6}}));
  }
  SECTION("circular") {
    // columns -> 1, 2, 0, 1, 2, 0; rows -> 1, 0, 1, 0
    require_exact(pad(x, p, PaddingMode::circular),
                  one_channel({{5, 6, 4, 5, 6, 4}, {2, 3, 1, 2, 3, 1}, {5, 6, 4, 5, 6, 4}, {2, 3, 1, 2, 3, 1}}));
  }
  SECTION("no padding is the identity, every channel kept") {
    Image<double> two({2, 2, 3});
    xt::view(two, 0) = xt::view(x, 0);
    xt::view(two, 1) = -xt::view(x, 0);
    for (auto mode : {PaddingMode::zeros, PaddingMode::reflect, PaddingMode::replicate, PaddingMode::circular})
      require_exact(pad(two, {}, mode), two);
    const Image<double> padded = pad(two, p, PaddingMode::reflect);
    require_exact(Image<double>(xt::view(padded, xt::range(1, 2))), Image<double>(-pad(x, p, PaddingMode::reflect)));
  }
}

TEST_CASE("pad: sizes PyTorch rejects are rejected, not read out of bounds", "[conv_reference]") {
  const Image<double> x = one_channel({{1, 2, 3}, {4, 5, 6}});
  // reflect needs pad < side (PyTorch: "Padding size should be less than the
  // corresponding input dimension"); circular needs pad <= side.
  CHECK_THROWS_AS(pad(x, {2, 0, 0, 0}, PaddingMode::reflect), std::invalid_argument);
  CHECK_THROWS_AS(pad(x, {0, 0, 0, 3}, PaddingMode::reflect), std::invalid_argument);
  CHECK_THROWS_AS(pad(x, {0, 3, 0, 0}, PaddingMode::circular), std::invalid_argument);
  CHECK_NOTHROW(pad(x, {1, 1, 2, 2}, PaddingMode::reflect));
  CHECK_NOTHROW(pad(x, {2, 2, 3, 3}, PaddingMode::circular));
  CHECK_NOTHROW(pad(x, {5, 5, 5, 5}, PaddingMode::zeros));
  CHECK_NOTHROW(pad(x, {5, 5, 5, 5}, PaddingMode::replicate));
}

TEST_CASE("reference::conv2d, conv2d_blocked and conv2d_gemm agree with every PyTorch fixture", "[conv_reference]") {
  const auto fixtures = testing::torch_fixtures("conv2d");
  REQUIRE(fixtures.size() >= 19);
  int grouped = 0, depthwise = 0, multiplier = 0;
  for (const auto& fixture : fixtures) {
    const nlohmann::json& f = fixture.entry;
    const std::string name = f["name"];
    INFO("fixture " << name);
    const Image<double> x = fixture.load("input");
    const Kernel<double> w = fixture.load("weight");
    const Image<double> output = fixture.load("output");
    std::optional<Vector<double>> bias;
    if (f["bias"].get<bool>()) bias = Vector<double>(fixture.load("bias"));
    const auto& sides = f["padding"];
    ConvGeometry g =
        geometry({sides[0], sides[1], sides[2], sides[3]}, padding_mode_from_string(f["padding_mode"]),
                 {f["stride"][0], f["stride"][1]}, {f["dilation"][0], f["dilation"][1]});
    g.groups = f.at("groups").get<int>();
    const int c_in = f["in_channels"], c_out = f["out_channels"];
    grouped += g.groups > 1;
    depthwise += g.groups == c_in && c_out == c_in;
    multiplier += g.groups == c_in && c_out == 2 * c_in;
    if (f["padding_spec"] == "same") {
      const Padding same = same_padding({f["kernel"][0], f["kernel"][1]}, g.dilation);
      CHECK(same.top == g.padding.top);
      CHECK(same.bottom == g.padding.bottom);
      CHECK(same.left == g.padding.left);
      CHECK(same.right == g.padding.right);
    }
    for (const Image<double>& y : {reference::conv2d(x, w, bias, g), conv2d_blocked(x, w, bias, g), conv2d_gemm(x, w, bias, g)}) {
      REQUIRE(y.shape() == output.shape());
      const Difference d = compare(y, output);
      INFO("rel_l2 = " << d.rel_l2 << ", max_abs = " << d.max_abs);
      CHECK(d.rel_l2 <= 1e-12);
      CHECK(d.max_abs <= 1e-12 * double(xt::amax(xt::abs(output))()));
    }
  }
  // groups 2, depthwise and a channel multiplier are among them (nn.Conv2d's groups).
  CHECK(grouped >= 4);
  CHECK(depthwise >= 2);
  CHECK(multiplier >= 1);
}
