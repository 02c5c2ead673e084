// conv2d_gemm's two forms (ops/conv2d_gemm.hpp) beyond the fast-path table
// (tests/unit/test_fast_paths.cpp, whose small samples fit in one block): on an image
// of many blocks, within round-off of reference::conv2d and bit-identical for any
// thread count; and the shifted form refusing a stride it cannot do.
#include <catch2/catch.hpp>
#include <xtensor/xmath.hpp>

#include "engine_threads.hpp"
#include "metrics/compare.hpp"
#include "ops/conv2d_gemm.hpp"
#include "reference/conv.hpp"
#include "tensor/random.hpp"

using namespace attnconv;

TEST_CASE("conv2d_gemm over many blocks: the reference's numbers to round-off, the same for any thread count",
          "[conv2d_gemm]") {
  // 64 outputs on a 96 x 96 image: the shifted form's blocks are 512 KiB / (8 * 64 * 98) = 10
  // rows, the im2col form's 8 MiB / (8 * 144 * 96) = 75 rows: several blocks each.
  const Random random(7);
  const Image<double> x = random.stream(1).uniform_tensor<double, 3>({16, 96, 96});
  const Kernel<double> w = random.stream(2).uniform_tensor<double, 4>({64, 16, 3, 3});
  const std::optional<Vector<double>> b = random.stream(3).uniform_tensor<double, 1>({64});
  ConvGeometry g;
  g.padding = {1, 1, 1, 1};
  const Image<double> reference = reference::conv2d(x, w, b, g);
  const double scale = double(xt::amax(xt::abs(reference))());
  for (const ConvGemmForm form : {ConvGemmForm::shifted, ConvGemmForm::im2col}) {
    const auto conv = [&] { return conv2d_gemm(x, w, b, g, form); };
    const Image<double> one = testing::on_engine_threads(1, conv);
    const Image<double> three = testing::on_engine_threads(3, conv);
    const bool same_for_threads = one == three, same_again = conv2d_gemm(x, w, b, g, form) == one;
    CHECK(compare(one, reference).max_abs <= 1e-12 * scale);  // as in tests/unit/test_fast_paths.cpp
    CHECK(same_for_threads);
    CHECK(same_again);
  }
}

TEST_CASE("conv2d_gemm's shifted form refuses a stride other than 1", "[conv2d_gemm]") {
  const Image<double> x = Random(1).uniform_tensor<double, 3>({2, 8, 8});
  const Kernel<double> w = Random(2).uniform_tensor<double, 4>({3, 2, 3, 3});
  const std::optional<Vector<double>> no_bias;
  ConvGeometry g;
  g.stride = {1, 2};
  CHECK_THROWS_WITH(conv2d_gemm(x, w, no_bias, g, ConvGemmForm::shifted),
                    "conv2d_gemm: the shifted form needs stride 1");
  CHECK_NOTHROW(conv2d_gemm(x, w, no_bias, g));
}
