// The MHSA engines (issue 5): the separable engine equals the dense one on
// positional-only layers, the dense engine equals a plain unblocked Eq. 8,
// results do not depend on the block size or the thread count beyond round-off,
// and the separable engine refuses layers it is not exact for.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

#include "construction/theorem1.hpp"
#include "harness/threads.hpp"
#include "mhsa/dense_engine.hpp"
#include "mhsa/engine.hpp"
#include "mhsa/separable_engine.hpp"
#include "ops/conv2d_reference.hpp"
#include "tensor/random.hpp"

using namespace attnconv;

namespace {

struct LayerShape {
  Encoding encoding = Encoding::quadratic;
  std::size_t heads = 4, d_in = 5, d_k = 4, d_h = 3, d_out = 6;
  double score_scale = 3;  // scales v: larger = sharper attention (40: many weights exactly 0)
  bool content = false;    // random W_qry, W_key, u (else W_qry = 0, u = 0: positional only)
};

template <class T> MhsaLayer<T> random_layer(std::uint64_t seed, const LayerShape& s) {
  Random random(seed);
  const std::size_t d_p = std::size_t(encoding_dim(s.encoding));
  MhsaLayer<T> layer;
  layer.encoding = s.encoding;
  for (std::size_t h = 0; h < s.heads; ++h) {
    AttentionHead<T> head;
    head.w_qry = random.uniform_tensor<T, 2>({s.d_in, s.d_k});
    head.w_key = random.uniform_tensor<T, 2>({s.d_in, s.d_k});
    head.w_key_hat = random.uniform_tensor<T, 2>({s.d_k, d_p});
    head.u = random.uniform_tensor<T, 1>({s.d_k});
    head.v = random.uniform_tensor<T, 1>({s.d_k}) * T(s.score_scale);
    head.w_val = random.uniform_tensor<T, 2>({s.d_in, s.d_h});
    if (!s.content) {
      head.w_qry.fill(T(0));
      head.u.fill(T(0));
    }
    // quadratic_general splits only without its delta1*delta2 term (column 2 of W^_key).
    if (s.encoding == Encoding::quadratic_general) xt::view(head.w_key_hat, xt::all(), 2) = T(0);
    layer.heads.push_back(std::move(head));
  }
  layer.w_out = random.uniform_tensor<T, 2>({s.heads * s.d_h, s.d_out});
  layer.b_out = random.uniform_tensor<T, 1>({s.d_out});
  return layer;
}

template <class T> Matrix<T> random_tokens(std::uint64_t seed, std::size_t n, std::size_t d_in) {
  return Random(seed).stream(purpose_id("input")).uniform_tensor<T, 2>({n, d_in});
}

double rel_l2(const Matrix<double>& a, const Matrix<double>& b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff += (a.data()[i] - b.data()[i]) * (a.data()[i] - b.data()[i]);
  for (std::size_t i = 0; i < b.size(); ++i) norm += b.data()[i] * b.data()[i];
  return std::sqrt(diff / norm);
}

double max_abs_diff(const Matrix<double>& a, const Matrix<double>& b) { return double(xt::amax(xt::abs(a - b))()); }

// Eq. 8 written out with plain loops, the whole attention matrix at once: the
// unblocked reference of the dense engine.
Matrix<double> mhsa_plain(const MhsaLayer<double>& layer, const Matrix<double>& x, std::size_t height, std::size_t width) {
  const std::size_t n = height * width, d_h = layer.head_dim(), d_p = std::size_t(encoding_dim(layer.encoding));
  Matrix<double> y = xt::zeros<double>({n, layer.out_dim()});
  std::vector<double> r(d_p);
  for (std::size_t h = 0; h < layer.heads.size(); ++h) {
    const auto& head = layer.heads[h];
    Matrix<double> query = xt::zeros<double>({n, head.w_qry.shape(1)}), key = query;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t d = 0; d < head.w_qry.shape(1); ++d)
        for (std::size_t c = 0; c < x.shape(1); ++c)
          query(i, d) += x(i, c) * head.w_qry(c, d), key(i, d) += x(i, c) * head.w_key(c, d);
    for (std::size_t qi = 0; qi < n; ++qi) {
      std::vector<double> a(n);
      for (std::size_t ki = 0; ki < n; ++ki) {
        relative_encoding(layer.encoding, int(ki / width) - int(qi / width), int(ki % width) - int(qi % width), r.data());
        double s = 0;
        for (std::size_t d = 0; d < head.w_qry.shape(1); ++d) {
          double key_hat_r = 0;
          for (std::size_t p = 0; p < d_p; ++p) key_hat_r += head.w_key_hat(d, p) * r[p];
          s += query(qi, d) * key(ki, d) + query(qi, d) * key_hat_r + head.u(d) * key(ki, d) + head.v(d) * key_hat_r;
        }
        a[ki] = s;
      }
      const double max = *std::max_element(a.begin(), a.end());
      double sum = 0;
      for (auto& value : a) sum += (value = std::exp(value - max));
      for (std::size_t o = 0; o < layer.out_dim(); ++o)
        for (std::size_t d = 0; d < d_h; ++d) {
          double sa = 0;  // SA_h(X)_q, component d
          for (std::size_t ki = 0; ki < n; ++ki)
            for (std::size_t c = 0; c < x.shape(1); ++c) sa += a[ki] / sum * x(ki, c) * head.w_val(c, d);
          y(qi, o) += sa * layer.w_out(h * d_h + d, o);
        }
    }
  }
  return y + xt::view(layer.b_out, xt::newaxis(), xt::all());
}

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
    const auto layer = random_layer<double>(seed, shape);
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

TEST_CASE("dense blocked equals plain unblocked Eq. 8, with content terms", "[engines]") {
  LayerShape shape;
  shape.content = true, shape.heads = 3;
  for (const Encoding encoding : {Encoding::quadratic, Encoding::quadratic_general}) {
    shape.encoding = encoding;
    const auto layer = random_layer<double>(11, shape);
    const auto x = random_tokens<double>(12, 6 * 7, shape.d_in);
    DenseOptions options;
    options.block = 5;
    CHECK(rel_l2(mhsa_dense(layer, x, 6, 7, options), mhsa_plain(layer, x, 6, 7)) <= 1e-13);
  }
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
    const auto layer = random_layer<double>(21, shape);
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
    const int threads = engine_threads();
    set_engine_threads(1);
    const Matrix<double> one_thread = mhsa_dense(layer, x, height, width);
    const Matrix<double> one_thread_separable = content ? one_thread : mhsa_separable(layer, x, height, width);
    set_engine_threads(3);
    const Matrix<double> three_threads = mhsa_dense(layer, x, height, width);
    const Matrix<double> three_threads_separable = content ? three_threads : mhsa_separable(layer, x, height, width);
    set_engine_threads(threads);
    CHECK(one_thread == three_threads);
    CHECK(one_thread_separable == three_threads_separable);
  }
}

TEST_CASE("the separable engine refuses layers it is not exact for; auto falls back to dense", "[engines]") {
  LayerShape shape;
  const auto x = random_tokens<double>(31, 4 * 5, shape.d_in);
  auto with_query = random_layer<double>(32, shape);
  with_query.heads[2].w_qry(0, 0) = 0.5;
  auto with_u = random_layer<double>(33, shape);
  with_u.heads[1].u(3) = -0.25;
  shape.encoding = Encoding::quadratic_general;
  auto cross = random_layer<double>(34, shape);
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
  CHECK(run_mhsa(Engine::auto_, random_layer<double>(35, shape), x, 4, 5).ran == Engine::separable);
  CHECK(engine_from_string("auto") == Engine::auto_);
  CHECK_THROWS_WITH(engine_from_string("fast"), Catch::Contains("unknown engine 'fast'"));
}

TEST_CASE("the cache-ordered convolution reference equals the textbook loop bit for bit", "[engines]") {
  Random random(41);
  const Image<double> x = random.uniform_tensor<double, 3>({3, 23, 10});  // several blocks of output rows
  const Kernel<double> w = random.uniform_tensor<double, 4>({4, 3, 3, 2});
  const Vector<double> b = random.uniform_tensor<double, 1>({4});
  ConvGeometry g;
  g.padding = {1, 2, 0, 1}, g.stride = {2, 1}, g.dilation = {1, 2};
  for (const auto stride : {std::array<int, 2>{1, 1}, std::array<int, 2>{2, 3}}) {
    g.stride = stride;
    const Image<double> y = conv2d_reference(x, w, std::optional<Vector<double>>(b), g);
    const Image<double> xpad = pad(x, g.padding, g.padding_mode);
    for (std::size_t o = 0; o < y.shape(0); ++o)
      for (std::size_t i = 0; i < y.shape(1); ++i)
        for (std::size_t j = 0; j < y.shape(2); ++j) {
          double sum = b(o);
          for (std::size_t c = 0; c < 3; ++c)
            for (std::size_t p = 0; p < 3; ++p)
              for (std::size_t q = 0; q < 2; ++q)
                sum += w(o, c, p, q) * xpad(c, i * stride[0] + p * 1, j * stride[1] + q * 2);
          REQUIRE(y(o, i, j) == sum);
        }
  }
}
