// max_abs_of_product_blocks (mhsa/blas.hpp: the finite-alpha bound's scales)
// against the plain loops: max over rows and a block's columns of |(A B)_ij|. The
// inputs are small integers, so every product and sum is exact in float32 and
// the two agree bit for bit; a NaN reaches exactly the blocks it touches.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "engine_threads.hpp"
#include "mhsa/blas.hpp"
#include "tensor/random.hpp"

namespace {

using namespace attnconv;

template <class T> Matrix<T> small_integers(Random random, std::size_t rows, std::size_t cols) {
  Matrix<T> m({rows, cols});
  for (T& v : m) v = T(std::floor(random.uniform() * 8));  // -8 ... 7
  return m;
}

// The textbook loops, NaN-propagating.
template <class T> std::vector<T> plain_block_max(const Matrix<T>& a, const Matrix<T>& b, std::size_t block_cols) {
  const std::size_t n = b.shape(1);
  std::vector<T> out((n + block_cols - 1) / block_cols, T(0));
  for (std::size_t i = 0; i < a.shape(0); ++i)
    for (std::size_t j = 0; j < n; ++j) {
      T sum = 0;
      for (std::size_t l = 0; l < a.shape(1); ++l) sum += a(i, l) * b(l, j);
      T& m = out[j / block_cols];
      m = std::isnan(m) || std::isnan(sum) ? std::numeric_limits<T>::quiet_NaN() : std::max(m, std::abs(sum));
    }
  return out;
}

template <class T> bool same(const std::vector<T>& x, const std::vector<T>& y) {
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])))) return false;
  return true;
}

}  // namespace

TEMPLATE_TEST_CASE("max_abs_of_product_blocks equals the plain loops, bit for bit, for any thread count",
                   "[mhsa][blas]", float, double) {
  const Random random(11);
  std::uint64_t purpose = 0;
  // Rows across several chunks (8 to 512 rows each), columns that are and are not
  // a multiple of the vector width, blocks that do not divide the columns.
  for (const std::size_t m : {1, 9, 700})
    for (const std::size_t n : {1, 7, 64, 203})
      for (const std::size_t block_cols : {1, 5, 64}) {
        const std::size_t k = 1 + (m + n) % 13;
        const Matrix<TestType> a = small_integers<TestType>(random.stream(++purpose), m, k);
        Matrix<TestType> b = small_integers<TestType>(random.stream(++purpose), k, n);
        INFO("m " << m << ", k " << k << ", n " << n << ", block " << block_cols);
        const std::vector<TestType> expected = plain_block_max(a, b, block_cols);
        const auto blocks = [&] { return max_abs_of_product_blocks(a, b, block_cols); };
        const std::vector<TestType> one = testing::on_engine_threads(1, blocks);
        const std::vector<TestType> three = testing::on_engine_threads(3, blocks);
        CHECK(same(one, expected));
        CHECK(same(three, expected));
        // A NaN in B's last column: its block alone turns NaN.
        b(k - 1, n - 1) = std::numeric_limits<TestType>::quiet_NaN();
        const std::vector<TestType> with_nan = max_abs_of_product_blocks(a, b, block_cols);
        CHECK(std::isnan(with_nan.back()));
        CHECK(same(with_nan, plain_block_max(a, b, block_cols)));
      }
}
