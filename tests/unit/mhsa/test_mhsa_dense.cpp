// mhsa_dense (the block-streamed, BLAS engine) against the textbook Eq. 8 of
// Cordonnier et al. (ICLR 2020), reference::mhsa, on a grid of small images and
// random layers whose every term is non-zero; the softmax helpers; alpha = 1e4.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "metrics/compare.hpp"
#include "mhsa/dense_engine.hpp"
#include "reference/mhsa.hpp"
#include "samples.hpp"
#include "tensor/random.hpp"

namespace {

using namespace attnconv;
using reference::Real;

// Every parameter random and non-zero. The positional part is scaled down so
// that the scores stay O(10) on these images: softmax neither uniform nor one-hot.
MhsaLayer<double> random_layer(Random& random, Encoding encoding, std::size_t heads, std::size_t d_in,
                               std::size_t d_h, std::size_t d_out) {
  samples::LayerShape shape;
  shape.encoding = encoding, shape.heads = heads, shape.d_in = d_in, shape.d_h = d_h, shape.d_out = d_out;
  shape.cycle_d_k = true, shape.position_scale = 0.2, shape.score_scale = 1, shape.content = true,
  shape.cross_term = true;
  return samples::random_layer<double>(random, shape);
}

}  // namespace

TEST_CASE("mhsa_dense equals the textbook Eq. 8 (reference::mhsa): random layers, all terms non-zero", "[mhsa_dense]") {
  const auto image = GENERATE(std::array<std::size_t, 2>{1, 1}, std::array<std::size_t, 2>{1, 7},
                              std::array<std::size_t, 2>{5, 1}, std::array<std::size_t, 2>{3, 3},
                              std::array<std::size_t, 2>{4, 6}, std::array<std::size_t, 2>{6, 5});
  const Encoding encoding = GENERATE(Encoding::quadratic, Encoding::quadratic_general, Encoding::quadratic_1d);
  const std::size_t heads = GENERATE(1, 2, 3, 4);
  const auto [height, width] = image;
  Random random(1000 * height + 100 * width + 10 * std::size_t(encoding) + heads);
  const std::size_t d_in = 1 + random.next_u64() % 4, d_h = 1 + random.next_u64() % 4, d_out = 1 + random.next_u64() % 4;
  INFO("image " << height << "x" << width << ", encoding " << to_string(encoding) << ", heads " << heads << ", D_in "
                << d_in << ", D_h " << d_h << ", D_out " << d_out);
  const MhsaLayer<double> layer = random_layer(random, encoding, heads, d_in, d_h, d_out);
  const Matrix<double> x = random.uniform_tensor<double, 2>({height * width, d_in});

  SECTION("float64 to 1e-12") {
    const xt::xtensor<Real, 2> expected = reference::mhsa(layer, x, height, width);
    const Matrix<double> y = mhsa_dense(layer, x, height, width);
    const Difference d = compare(y, expected);
    INFO("rel_l2 " << d.rel_l2 << ", max_abs " << d.max_abs);
    CHECK(d.rel_l2 <= 1e-12);
    CHECK(d.max_abs <= 1e-12 * double(xt::amax(xt::abs(expected))()));
  }
  SECTION("float32 to 1e-5") {
    const MhsaLayer<float> layer32 = samples::cast_layer<float>(layer);
    const Matrix<float> x32 = xt::cast<float>(x);
    const xt::xtensor<Real, 2> expected = reference::mhsa(layer32, x32, height, width);  // the same float32 numbers
    const Difference d = compare(mhsa_dense(layer32, x32, height, width), expected);
    INFO("rel_l2 " << d.rel_l2 << ", max_abs " << d.max_abs);
    CHECK(d.rel_l2 <= 1e-5);
  }
  SECTION("the query block size changes nothing but round-off") {
    const std::size_t n = height * width;
    const Matrix<double> whole = mhsa_dense(layer, x, height, width, {n});
    const double scale = double(xt::amax(xt::abs(whole))());
    for (const std::size_t block : {std::size_t(1), std::size_t(7), std::size_t(0), n + 5}) {
      INFO("block " << block);
      const Difference d = compare(mhsa_dense(layer, x, height, width, {block}), whole);
      CHECK(d.max_abs <= 1e-14 * scale);
    }
  }
}

TEST_CASE("softmax_inplace subtracts the row maximum: exact at scores of 1e4", "[mhsa_dense]") {
  SECTION("one-hot") {
    std::vector<double> row{-1e4, 0, -2e4, -1e4};
    softmax_inplace(row.data(), row.size());
    CHECK(row == std::vector<double>{0, 1, 0, 0});
    std::vector<float> big{1e4f, 2e4f, 0, 1e4f};  // exp(2e4) would overflow without the shift
    softmax_inplace(big.data(), big.size());
    CHECK(big == std::vector<float>{0, 1, 0, 0});
  }
  SECTION("ties share exactly") {
    std::vector<double> row{3e4, 2e4, 3e4, 3e4, -1e4};
    softmax_inplace(row.data(), row.size());
    CHECK(row == std::vector<double>{1.0 / 3, 0, 1.0 / 3, 1.0 / 3, 0});
    std::vector<double> flat(5, 1e4);
    softmax_inplace(flat.data(), flat.size());
    for (double p : flat) CHECK(p == 0.2);
  }
}

TEST_CASE("softmax_span is the first and last key whose weight does not underflow", "[mhsa_dense]") {
  // Rows of every length around the scan's chunks of 8: a few keys near the
  // maximum, the rest -1000 below it (e^-1000 = 0 exactly), in random places.
  Random random(7);
  for (std::size_t n = 1; n <= 40; ++n)
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> row(n, -1000.0);
      const xt::xtensor<double, 1> u = random.stream(n * 100 + std::size_t(trial)).uniform_tensor<double, 1>({3});
      for (const double v : u) row[std::size_t((v + 1) / 2 * double(n))] = v;  // keys near 0
      const double max = row_max(row.data(), n);
      std::size_t begin = 0, end = n;  // the textbook scan
      while (std::exp(row[begin] - max) == 0) ++begin;
      while (std::exp(row[end - 1] - max) == 0) --end;
      const SoftmaxSupport span = softmax_span(row.data(), n, max);
      INFO("n " << n << ", trial " << trial);
      CHECK(span.begin == begin);
      CHECK(span.end == end);
    }
}

TEST_CASE("softmax_span and softmax_exp from chunk maxima: the same span and the same bits as over the whole row",
          "[mhsa_dense]") {
  // Rows of `chunks` chunks of `width` keys (key rows of an image): a few keys
  // near the maximum, the rest -1000 below (e^-1000 = 0 exactly); sometimes a
  // NaN far from them, which must widen the span to the whole row.
  Random random(8);
  for (std::size_t width = 1; width <= 9; ++width)
    for (std::size_t chunks = 1; chunks <= 6; ++chunks)
      for (int trial = 0; trial < 10; ++trial) {
        const std::size_t n = width * chunks;
        const xt::xtensor<double, 1> u =
            random.stream(n * 1000 + width * 10 + std::size_t(trial)).uniform_tensor<double, 1>({4});
        std::vector<double> row(n, -1000.0);
        for (std::size_t i = 0; i < 3; ++i) row[std::size_t((u(i) + 1) / 2 * double(n))] = u(i);
        if (trial % 3 == 2) row[std::size_t((u(3) + 1) / 2 * double(n))] = std::nan("");
        std::vector<double> chunk_max(chunks);
        for (std::size_t c = 0; c < chunks; ++c) chunk_max[c] = row_max(row.data() + c * width, width);
        const double max = row_max(chunk_max.data(), chunks);
        INFO("width " << width << ", chunks " << chunks << ", trial " << trial);
        CHECK(std::isnan(max) == (trial % 3 == 2));
        if (!std::isnan(max)) CHECK(max == row_max(row.data(), n));
        const SoftmaxSupport whole = softmax_span(row.data(), n, max);
        const SoftmaxSupport span = softmax_span(row.data(), chunk_max.data(), chunks, width, max);
        CHECK(span.begin == whole.begin);
        CHECK(span.end == whole.end);
        if (std::isnan(max)) CHECK((span.begin == 0 && span.end == n));
        std::vector<double> expected = row, got = row;
        softmax_exp(expected.data(), whole, max);
        softmax_exp(got.data(), span, chunk_max.data(), width, max);
        for (std::size_t k = 0; k < n; ++k) {
          INFO("key " << k);
          if (std::isnan(max))
            CHECK(std::isnan(got[k]));
          else
            CHECK(std::memcmp(&got[k], &expected[k], sizeof(double)) == 0);
        }
      }
}

TEST_CASE("row_max is NaN when any score is NaN, wherever it lies", "[mhsa_dense]") {
  for (const std::size_t n : {1, 7, 8, 9, 17, 33})
    for (std::size_t at = 0; at < n; ++at) {
      std::vector<double> row(n, 1.0);
      row[at] = std::nan("");
      INFO("n " << n << ", NaN at " << at);
      CHECK(std::isnan(row_max(row.data(), n)));
      CHECK(std::isnan(row_max(std::vector<float>(row.begin(), row.end()).data(), n)));
    }
}

TEST_CASE("mhsa_dense at alpha = 1e4: finite, and one-hot where the target key exists", "[mhsa_dense]") {
  // One head, D_in = D_h = D_out = 2, W_val = W_out = I, b_out = 0, W^_key = I_3,
  // v = -alpha (1, -2 Delta1, -2 Delta2): A_qk = -alpha(|delta - Delta|^2 - |Delta|^2)
  // plus O(1) content terms (W_qry, W_key, u random), which cannot compete with
  // gaps of alpha. So query q reads exactly X_{q + Delta} when that pixel exists.
  const double alpha = 1e4;
  const std::size_t height = 5, width = 6;
  const int target1 = 1, target2 = -2;  // Delta
  const auto dtype_case = [&](auto tag) {
    using T = decltype(tag);
    Random random(11);
    AttentionHead<T> head;
    head.w_qry = random.uniform_tensor<T, 2>({2, 3});
    head.w_key = random.uniform_tensor<T, 2>({2, 3});
    head.w_key_hat = xt::eye<T>(3);
    head.u = random.uniform_tensor<T, 1>({3});
    head.v = Vector<T>{T(-alpha), T(2 * alpha * target1), T(2 * alpha * target2)};
    head.w_val = xt::eye<T>(2);
    MhsaLayer<T> layer;
    layer.heads = {head};
    layer.w_out = xt::eye<T>(2);
    layer.b_out = xt::zeros<T>({2});
    const Matrix<T> x = random.uniform_tensor<T, 2>({height * width, 2});
    const Matrix<T> y = mhsa_dense(layer, x, height, width);
    for (const T value : y) REQUIRE(std::isfinite(value));
    int interior = 0;
    for (std::size_t i = 0; i < height; ++i)
      for (std::size_t j = 0; j < width; ++j) {
        const int ti = int(i) + target1, tj = int(j) + target2;
        if (ti < 0 || ti >= int(height) || tj < 0 || tj >= int(width)) continue;
        ++interior;
        for (std::size_t c = 0; c < 2; ++c) CHECK(y(i * width + j, c) == x(std::size_t(ti) * width + std::size_t(tj), c));
      }
    CHECK(interior == int((height - 1) * (width - 2)));
  };
  SECTION("float64") { dtype_case(double{}); }
  SECTION("float32") { dtype_case(float{}); }
}

TEST_CASE("mhsa_dense rejects inconsistent shapes", "[mhsa_dense]") {
  Random random(5);
  MhsaLayer<double> layer = random_layer(random, Encoding::quadratic, 2, 3, 2, 2);
  const Matrix<double> x = random.uniform_tensor<double, 2>({12, 3});
  CHECK_NOTHROW(mhsa_dense(layer, x, 3, 4));
  CHECK_THROWS_AS(mhsa_dense(layer, x, 4, 4), std::invalid_argument);  // 12 tokens are not 4 x 4
  layer.heads[1].v = xt::zeros<double>({7});
  CHECK_THROWS_AS(mhsa_dense(layer, x, 3, 4), std::invalid_argument);
}
