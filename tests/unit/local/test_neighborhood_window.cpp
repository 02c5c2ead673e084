// NATTEN's current neighbourhood parameters (src/local/neighborhood_attention.hpp):
// window starts worked by hand for even windows, strides and causal axes; the
// window start against the textbook mask (src/reference/neighborhood_attention.hpp)
// on every small axis; both attentions against the independent PyTorch
// statement of tests/fixtures/make_local_fixtures.py (float64, 1e-12 relative).
#include <catch2/catch.hpp>
#include <filesystem>

#include "local/neighborhood_attention.hpp"
#include "metrics/compare.hpp"
#include "reference/neighborhood_attention.hpp"
#include "torch_fixtures.hpp"

using namespace attnconv;

namespace {

std::vector<int> keys_of(int index, int length, const NeighborhoodAxis& axis) {
  const AxisKeys keys = neighborhood_keys(index, length, axis);
  std::vector<int> out;
  for (int n = 0; n < keys.count; ++n) out.push_back(keys.first + n * axis.dilation);
  return out;
}

using Keys = std::vector<int>;

}  // namespace

TEST_CASE("even windows, strides and causal axes start where NATTEN's mask puts them", "[neighborhood_window]") {
  CHECK(window_left(4) == 2);
  CHECK(window_right(4) == 1);
  CHECK(window_left(5) == 2);
  CHECK(window_right(5) == 2);
  CHECK(window_right(2) == 0);
  // w = 4 on L = 8: two keys before the query, one after; clamped at both ends.
  const NeighborhoodAxis even{.window = 4};
  CHECK(keys_of(0, 8, even) == Keys{0, 1, 2, 3});
  CHECK(keys_of(3, 8, even) == Keys{1, 2, 3, 4});
  CHECK(keys_of(6, 8, even) == Keys{4, 5, 6, 7});
  CHECK(keys_of(7, 8, even) == Keys{4, 5, 6, 7});
  // w = s = 3 on L = 9: the blocks [0, 3), [3, 6), [6, 9); on L = 10 the last group {9} takes [7, 10).
  const NeighborhoodAxis blocked{.window = 3, .stride = 3};
  CHECK(keys_of(0, 9, blocked) == Keys{0, 1, 2});
  CHECK(keys_of(2, 9, blocked) == Keys{0, 1, 2});
  CHECK(keys_of(3, 9, blocked) == Keys{3, 4, 5});
  CHECK(keys_of(8, 9, blocked) == Keys{6, 7, 8});
  CHECK(keys_of(9, 10, blocked) == Keys{7, 8, 9});
  // w = 4, s = 2 on L = 9: group {2, 3} has the leader 3 (the right centre), window [1, 5).
  CHECK(keys_of(2, 9, {.window = 4, .stride = 2}) == Keys{1, 2, 3, 4});
  // Causal w = 3: the window ends at the query, short at the start.
  const NeighborhoodAxis causal{.window = 3, .causal = true};
  CHECK(keys_of(0, 7, causal) == Keys{0});
  CHECK(keys_of(1, 7, causal) == Keys{0, 1});
  CHECK(keys_of(4, 7, causal) == Keys{2, 3, 4});
  // Causal w = 3, s = 2: the leader is the group's last query; query 2 (leader 3) keeps 1..2.
  CHECK(keys_of(2, 7, {.window = 3, .stride = 2, .causal = true}) == Keys{1, 2});
  CHECK(keys_of(3, 7, {.window = 3, .stride = 2, .causal = true}) == Keys{1, 2, 3});
  // Dilation 2 on L = 11 (not a multiple of 2): odd positions 1..9 (5), even 0..10 (6); w = 4.
  CHECK(keys_of(9, 11, {.window = 4, .dilation = 2}) == Keys{3, 5, 7, 9});
  CHECK(keys_of(10, 11, {.window = 4, .dilation = 2}) == Keys{4, 6, 8, 10});
  CHECK(keys_of(1, 11, {.window = 4, .dilation = 2}) == Keys{1, 3, 5, 7});
  // NATTEN's requirements.
  CHECK_THROWS_AS(neighborhood_keys(0, 7, {.window = 4, .dilation = 2}), std::invalid_argument);  // L < w d
  CHECK_THROWS_AS(neighborhood_keys(0, 9, {.window = 3, .stride = 4}), std::invalid_argument);  // s > w
  CHECK_THROWS_AS(neighborhood_start(0, 9, 4, 1), std::invalid_argument);  // 0.17: odd windows only
  CHECK(neighborhood_start(5, 9, 3, 2) == neighborhood_keys(5, 9, {.window = 3, .dilation = 2}).first);
}

TEST_CASE("the window start is the textbook mask on every small axis", "[neighborhood_window]") {
  int axes = 0;
  for (int w = 1; w <= 6; ++w)
    for (int s = 1; s <= w; ++s)
      for (int d = 1; d <= 3; ++d)
        for (const bool causal : {false, true})
          for (int length = w * d; length <= w * d + 7; ++length) {
            const NeighborhoodAxis axis{.window = w, .stride = s, .dilation = d, .causal = causal};
            ++axes;
            for (int i = 0; i < length; ++i) {
              INFO("L " << length << " w " << w << " s " << s << " d " << d << " causal " << causal << " i " << i);
              Keys masked;
              for (int key = 0; key < length; ++key)
                if (reference::is_neighbor(i, key, length, axis)) masked.push_back(key);
              const Keys keys = keys_of(i, length, axis);
              REQUIRE(keys == masked);
              // The window holds the query, inside the axis; w keys unless causal (then at most w, ending at it).
              CHECK(std::find(keys.begin(), keys.end(), i) != keys.end());
              CHECK(keys.front() >= 0);
              CHECK(keys.back() < length);
              CHECK(int(keys.size()) == (causal ? int(keys.size()) : w));
              CHECK(int(keys.size()) <= w);
              if (causal) CHECK(keys.back() == i);
            }
          }
  CHECK(axes == 2 * 3 * 8 * (1 + 2 + 3 + 4 + 5 + 6));
}

TEST_CASE("neighborhood attention with NATTEN's current parameters matches every PyTorch fixture",
          "[neighborhood_window]") {
  const auto fixtures = testing::torch_fixtures("local", "cases", "neighborhood_current");
  REQUIRE(fixtures.size() >= 7);
  for (const auto& f : fixtures) {
    INFO("fixture " << f.name());
    Neighborhood axes;
    for (std::size_t a = 0; a < 2; ++a)
      axes[a] = {.window = f.entry["window"][a].get<int>(), .stride = f.entry["stride"][a].get<int>(),
                 .dilation = f.entry["dilation"][a].get<int>(), .causal = f.entry["causal"][a].get<bool>()};
    const HeadMaps<double> q = f.load("q"), k = f.load("k"), v = f.load("v"), expected = f.load("output");
    const xt::xtensor<double, 3> rpb =
        f.entry["rpb"].get<bool>() ? f.load<xt::xtensor<double, 3>>("rpb") : xt::xtensor<double, 3>({0, 0, 0});
    const double scale = double(xt::amax(xt::abs(expected))());
    CHECK(compare(neighborhood_attention(q, k, v, rpb, axes), expected).max_abs < 1e-12 * scale);
    CHECK(compare(reference::neighborhood_attention(q, k, v, rpb, axes), expected).max_abs < 1e-12 * scale);
  }
}
