// The local attention variants (src/local/): pinned against the independent
// PyTorch statement of tests/fixtures/make_local_fixtures.py (float64, 1e-12
// relative), NATTEN's window start on hand-worked axes, and Han et al.'s
// rewrite of Swin's window attention as a locally connected layer.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <xtensor/xnpy.hpp>

#include "local/neighborhood_attention.hpp"
#include "local/window_attention.hpp"
#include "metrics/compare.hpp"
#include "torch_fixtures.hpp"

using namespace attnconv;

namespace {

template <class A, class E> double relative_max(const A& actual, const E& expected) {
  const double scale = double(xt::amax(xt::abs(expected))());
  return compare(actual, expected).max_abs / (scale > 0 ? scale : 1.0);
}

}  // namespace

TEST_CASE("neighborhood_start is NATTEN's clamped window start", "[local_attention]") {
  // L = 7, K = 3: the border queries keep 3 keys, shifted inward.
  CHECK(neighborhood_start(0, 7, 3, 1) == 0);
  CHECK(neighborhood_start(1, 7, 3, 1) == 0);
  CHECK(neighborhood_start(3, 7, 3, 1) == 2);
  CHECK(neighborhood_start(6, 7, 3, 1) == 4);
  // L = 11, K = 3, d = 2: the even positions 0..10 (6 of them) and the odd 1..9 (5).
  CHECK(neighborhood_start(0, 11, 3, 2) == 0);
  CHECK(neighborhood_start(1, 11, 3, 2) == 1);
  CHECK(neighborhood_start(10, 11, 3, 2) == 6);
  CHECK(neighborhood_start(9, 11, 3, 2) == 5);
  // Every window holds K keys of the query's residue inside the axis and contains the query.
  for (int length : {9, 10, 13})
    for (int kernel : {1, 3})
      for (int dilation : {1, 2, 3})
        for (int i = 0; i < length; ++i) {
          const int start = neighborhood_start(i, length, kernel, dilation);
          const int last = start + (kernel - 1) * dilation;
          INFO("L " << length << " K " << kernel << " d " << dilation << " i " << i);
          CHECK(start >= 0);
          CHECK(last < length);
          CHECK(start % dilation == i % dilation);
          CHECK(start <= i);
          CHECK(i <= last);
        }
  CHECK_THROWS_AS(neighborhood_start(0, 5, 3, 2), std::invalid_argument);  // needs L >= K d = 6
  CHECK_THROWS_AS(neighborhood_start(0, 9, 4, 1), std::invalid_argument);  // even window
}

TEST_CASE("neighborhood attention matches every PyTorch fixture", "[local_attention]") {
  const auto fixtures = testing::torch_fixtures("local", "cases", "neighborhood");
  REQUIRE(fixtures.size() >= 5);
  for (const auto& f : fixtures) {
    INFO("fixture " << f.name());
    const xt::xtensor<double, 3> rpb = f.load("rpb");
    const HeadMaps<double> out = neighborhood_attention(f.load<HeadMaps<double>>("q"), f.load<HeadMaps<double>>("k"),
                                                        f.load<HeadMaps<double>>("v"), rpb,
                                                        f.entry["kernel"].get<int>(), f.entry["dilation"].get<int>());
    CHECK(relative_max(out, f.load<HeadMaps<double>>("output")) < 1e-12);
  }
}

TEST_CASE("Swin window attention matches every PyTorch fixture, and Han et al.'s locally connected form equals it",
          "[local_attention]") {
  const auto fixtures = testing::torch_fixtures("local", "cases", "swin");
  REQUIRE(fixtures.size() >= 7);
  for (const auto& f : fixtures) {
    INFO("fixture " << f.name());
    const Matrix<double> table = f.load("table");
    // window and shift: M or [M1, M2] (rectangular windows, a shift per axis).
    const auto extent = [&](const char* key) {
      const auto& v = f.entry[key];
      return v.is_array() ? Extent2{v[0].get<int>(), v[1].get<int>()} : Extent2{v.get<int>(), v.get<int>()};
    };
    const Extent2 window = extent("window"), shift = extent("shift");
    const HeadMaps<double> q = f.load("q"), k = f.load("k"), v = f.load("v");
    const HeadMaps<double> out = swin_window_attention(q, k, v, table, window, shift);
    CHECK(relative_max(out, f.load<HeadMaps<double>>("output")) < 1e-12);
    const HeadMaps<double> rewritten = locally_connected(swin_attention_weights(q, k, table, window, shift), v);
    CHECK(relative_max(rewritten, out) < 1e-12);
  }
}

TEST_CASE("Swin's relative position index and shift regions", "[local_attention]") {
  // M = 2: query (0, 0), key (1, 1) is offset query - key = (-1, -1) -> (0 * 3 + 0).
  CHECK(swin_bias_index(2, {0, 0}, {1, 1}) == 0);
  CHECK(swin_bias_index(2, {1, 1}, {0, 0}) == 8);
  CHECK(swin_bias_index(2, {0, 1}, {0, 1}) == 4);
  const std::vector<int> none = swin_regions(4, 4, 2, 0);
  CHECK(std::all_of(none.begin(), none.end(), [](int r) { return r == 0; }));
  // Hp = Wp = 4, M = 2, s = 1: row slices [0, 2), [2, 3), [3, 4).
  const std::vector<int> r = swin_regions(4, 4, 2, 1);
  CHECK(r[0] == 0);
  CHECK(r[2 * 4 + 0] == 3);
  CHECK(r[3 * 4 + 3] == 8);
  CHECK(r[2 * 4 + 3] == 5);
  CHECK_THROWS_AS(swin_window_attention(HeadMaps<double>(xt::zeros<double>({1, 5, 4, 1})),
                                        HeadMaps<double>(xt::zeros<double>({1, 5, 4, 1})),
                                        HeadMaps<double>(xt::zeros<double>({1, 5, 4, 1})),
                                        Matrix<double>(xt::zeros<double>({9, 1})), 2, 0),
                  std::invalid_argument);
}
