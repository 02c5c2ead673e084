// The MHSA engines: the separable engine equals the dense one on
// positional-only layers, results do not depend on the block size or the
// thread count beyond round-off, and the separable engine refuses layers it is
// not exact for. (Both against the textbook Eq. 8: tests/unit/test_fast_paths.cpp.)
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

#include "construction/theorem1.hpp"
#include "engine_threads.hpp"
#include "mhsa/dense_engine.hpp"
#include "mhsa/engine.hpp"
#include "mhsa/separable_engine.hpp"
#include "metrics/compare.hpp"
#include "samples.hpp"
#include "tensor/random.hpp"

using namespace attnconv;

namespace {

using samples::LayerShape, samples::random_layer, samples::random_tokens;

double rel_l2(const Matrix<double>& a, const Matrix<double>& b) { return compare(a, b).rel_l2; }
double max_abs_diff(const Matrix<double>& a, const Matrix<double>& b) { return compare(a, b).max_abs; }

}  // namespace

TEST_CASE("separable equals dense on random positional-only layers (float64, 1e-12 relative)", "[engines]") {
  const struct {
    Encoding encoding;
    std::size_t height, width;
    double score_scale;
  } configs[] = {{Encoding::quadratic, 7, 9, 3},           {Encoding::quadratic, 12, 5, 0.3},
                 {Encoding::quadratic, 10, 10, 40},        // sharp: many weights exactly 0
                 {Encoding::quadratic_1d, 1, 17, 3},       {Encoding::quadratic_1d, 4, 6, 3},
                 {Encoding::quadratic_general, 8, 6, 2}};
  std::uint64_t seed = 1;
  for (const auto& config : configs) {
    LayerShape shape;
    shape.encoding = config.encoding, shape.score_scale = config.score_scale;
    const auto layer = random_layer<double>(std::uint64_t(seed), shape);
    const auto x = random_tokens<double>(seed++, config.height * config.width, shape.d_in);
    const Matrix<double> dense = mhsa_dense(layer, x, config.height, config.width);
    const Matrix<double> separable = mhsa_separable(layer, x, config.height, config.width);
    INFO(to_string(config.encoding) << " " << config.height << "x" << config.width << " scale " << config.score_scale);
    CHECK(rel_l2(separable, dense) <= 1e-12);
    CHECK(max_abs_diff(separable, dense) <= 1e-12 * double(xt::amax(xt::abs(dense))()));
  }
}

TEST_CASE("separable equals dense on the Theorem 1 layer, float64 and float32", "[engines]") {
  Random random(5);
  const Kernel<double> w = random.uniform_tensor<double, 4>({4, 3, 3, 3});
  const Vector<double> b = random.uniform_tensor<double, 1>({4});
  Theorem1Options options;
  options.heads = 9, options.head_dim = 4, options.alpha = 60;
  const auto layer = theorem1_layer<double>(w, b, options);
  const auto x = random_tokens<double>(6, 11 * 13, 3);
  CHECK(rel_l2(mhsa_separable(layer, x, 11, 13), mhsa_dense(layer, x, 11, 13)) <= 1e-12);

  const Kernel<float> wf = xt::cast<float>(w);
  const auto layer_f = theorem1_layer<float>(wf, Vector<float>(xt::cast<float>(b)), options);
  const Matrix<float> xf = xt::cast<float>(x);
  const Matrix<double> dense_f = xt::cast<double>(mhsa_dense(layer_f, xf, 11, 13));
  const Matrix<double> separable_f = xt::cast<double>(mhsa_separable(layer_f, xf, 11, 13));
  CHECK(rel_l2(separable_f, dense_f) <= 1e-5);
}

// Bound: the block size changes only which rows share a product and which
// exactly-zero weights are multiplied in, i.e. how BLAS groups the sum over
// keys; both results are within the gamma_m model (Higham 2002, 3.1) of the
// exact value, so they differ by at most
//   2 gamma_m sum_h max_k |X_k W_val^h| max_o sum_d |W_out^h_do|,  gamma_m ~ m u, m = HW + D_h.
// The thread count changes nothing: blocks are fixed and each is computed by
// one thread, so results are bit-identical for any thread count.
TEST_CASE("dense results do not depend on block size or thread count beyond round-off", "[engines]") {
  for (const bool content : {false, true}) {
    LayerShape shape;
    shape.content = content, shape.score_scale = 1;
    const std::size_t height = 9, width = 11, n = height * width;
    const auto layer = random_layer<double>(std::uint64_t(21), shape);
    const auto x = random_tokens<double>(22, n, shape.d_in);
    double scale = 0;
    for (std::size_t h = 0; h < layer.heads.size(); ++h) {
      const Matrix<double> v = xt::linalg::dot(x, layer.heads[h].w_val);
      const Matrix<double> w_out_h = xt::view(layer.w_out, xt::range(h * shape.d_h, (h + 1) * shape.d_h), xt::all());
      scale += double(xt::amax(xt::abs(v))()) * double(xt::amax(xt::sum(xt::abs(w_out_h), {0}))());
    }
    const double bound = 2 * double(n + shape.d_h) * std::numeric_limits<double>::epsilon() / 2 * scale;
    DenseOptions whole;
    whole.block = n;
    const Matrix<double> reference = mhsa_dense(layer, x, height, width, whole);
    for (const std::size_t block : {1, 7, 16, 64}) {
      DenseOptions options;
      options.block = block;
      INFO("content " << content << ", block " << block);
      CHECK(max_abs_diff(mhsa_dense(layer, x, height, width, options), reference) <= bound);
    }
    const auto dense = [&] { return mhsa_dense(layer, x, height, width); };
    const auto separable = [&] { return mhsa_separable(layer, x, height, width); };
    const Matrix<double> one_thread = testing::on_engine_threads(1, dense);
    const Matrix<double> one_thread_separable = content ? one_thread : testing::on_engine_threads(1, separable);
    const Matrix<double> three_threads = testing::on_engine_threads(3, dense);
    const Matrix<double> three_threads_separable = content ? three_threads : testing::on_engine_threads(3, separable);
    CHECK(one_thread == three_threads);
    CHECK(one_thread_separable == three_threads_separable);
  }
}

TEST_CASE("the separable engine refuses layers it is not exact for; auto falls back to dense", "[engines]") {
  LayerShape shape;
  const auto x = random_tokens<double>(31, 4 * 5, shape.d_in);
  auto with_query = random_layer<double>(std::uint64_t(32), shape);
  with_query.heads[2].w_qry(0, 0) = 0.5;
  auto with_u = random_layer<double>(std::uint64_t(33), shape);
  with_u.heads[1].u(3) = -0.25;
  shape.encoding = Encoding::quadratic_general;
  auto cross = random_layer<double>(std::uint64_t(34), shape);
  cross.heads[0].w_key_hat(0, 2) = 1;  // a delta1*delta2 term
  const struct {
    const MhsaLayer<double>& layer;
    const char* reason;
  } refused[] = {{with_query, "head 2: W_qry"}, {with_u, "head 1: u and W_key"}, {cross, "delta1*delta2"}};
  for (const auto& r : refused) {
    CHECK_THROWS_WITH(mhsa_separable(r.layer, x, 4, 5), Catch::Contains(r.reason) && Catch::Contains("not exact"));
    CHECK_THROWS_WITH(run_mhsa(Engine::separable, r.layer, x, 4, 5), Catch::Contains(r.reason));
    const auto ran = run_mhsa(Engine::auto_, r.layer, x, 4, 5);
    CHECK(ran.ran == Engine::dense);
    CHECK(ran.y == mhsa_dense(r.layer, x, 4, 5));
  }
  shape.encoding = Encoding::quadratic;
  CHECK(run_mhsa(Engine::auto_, random_layer<double>(std::uint64_t(35), shape), x, 4, 5).ran == Engine::separable);
  CHECK(engine_from_string("auto") == Engine::auto_);
  CHECK_THROWS_WITH(engine_from_string("fast"), Catch::Contains("unknown engine 'fast'"));
}

TEST_CASE("the engines at a grid of queries give the whole image's outputs at those queries", "[engines]") {
  const struct {
    std::size_t height, width;
    QueryGrid queries;
  } configs[] = {{9, 11, {{1, 2}, {2, 3}, {4, 3}}},   // strided, offset
                 {8, 8, {{0, 0}, {1, 1}, {8, 8}}},    // every query
                 {10, 7, {{3, 0}, {3, 2}, {3, 4}}},   // up to the last row and column
                 {6, 6, {{2, 5}, {1, 1}, {0, 1}}}};   // no query at all
  std::uint64_t seed = 11;
  for (const auto& config : configs) {
    LayerShape shape;
    shape.encoding = Encoding::quadratic, shape.score_scale = 3;
    const auto layer = random_layer<double>(seed, shape);
    const auto x = random_tokens<double>(seed++, config.height * config.width, shape.d_in);
    const QueryGrid& q = config.queries;
    for (const Engine engine : {Engine::separable, Engine::dense}) {
      const Matrix<double> all = run_mhsa(engine, layer, x, config.height, config.width).y;
      const EngineResult<double> kept = run_mhsa(engine, layer, x, config.height, config.width, q);
      INFO(to_string(engine) << " " << config.height << "x" << config.width);
      REQUIRE(kept.y.shape(0) == q.size());
      REQUIRE(kept.y.shape(1) == all.shape(1));
      double largest = 0, diff = 0;
      for (std::size_t i = 0; i < q.count[0]; ++i)
        for (std::size_t j = 0; j < q.count[1]; ++j)
          for (std::size_t o = 0; o < all.shape(1); ++o) {
            const double expected = all(q.at(0, i) * config.width + q.at(1, j), o);
            largest = std::max(largest, std::abs(expected));
            diff = std::max(diff, std::abs(kept.y(i * q.count[1] + j, o) - expected));
          }
      CHECK(diff <= 1e-14 * largest);
    }
  }
  LayerShape shape;
  const auto layer = random_layer<double>(1, shape);
  const auto x = random_tokens<double>(1, 4 * 4, shape.d_in);
  CHECK_THROWS_AS(mhsa_separable(layer, x, 4, 4, QueryGrid{{1, 0}, {2, 1}, {3, 4}}), std::invalid_argument);
}
