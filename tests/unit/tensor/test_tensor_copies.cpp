// The tensor layer's blocked copies against xtensor's own views: the same entries.
#include <catch2/catch.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

#include "tensor/random.hpp"
#include "tensor/tensor.hpp"

using namespace attnconv;

TEST_CASE("kernel_slices_t and kernel_slices: W_conv[:, :, p, q] (transposed or not) for every position, at p K2 + q",
          "[tensor]") {
  // Sizes across the copy's blocks of 16 output channels, and a kernel with one channel.
  const auto [c_out, c_in, k1, k2] = GENERATE(table<std::size_t, std::size_t, std::size_t, std::size_t>(
      {{3, 5, 3, 3}, {17, 33, 1, 1}, {40, 16, 2, 3}, {1, 1, 7, 7}}));
  Random random(7);
  const Kernel<double> w = random.uniform_tensor<double, 4>({c_out, c_in, k1, k2});
  const std::vector<Matrix<double>> slices_t = kernel_slices_t(w), slices = kernel_slices(w);
  REQUIRE(slices_t.size() == k1 * k2);
  REQUIRE(slices.size() == k1 * k2);
  for (std::size_t p = 0; p < k1; ++p)
    for (std::size_t q = 0; q < k2; ++q) {
      const Matrix<double> expected = xt::view(w, xt::all(), xt::all(), p, q);
      INFO(c_out << "x" << c_in << " kernel " << k1 << "x" << k2 << " at (" << p << ", " << q << ")");
      const bool same = slices[p * k2 + q] == expected;
      CHECK(same);
      const bool same_t = slices_t[p * k2 + q] == Matrix<double>(xt::transpose(expected));
      CHECK(same_t);
    }
}
