// fit_sweeps: the slope of ln(max_abs) against alpha per sweep group, over the
// points above round-off only.
#include <catch2/catch.hpp>
#include <cmath>

#include "report/sweep_fit.hpp"

using attnconv::json;

namespace {
json entry(const std::string& group, double alpha, double max_abs, double roundoff) {
  return {{"name", group + "[alpha=" + std::to_string(alpha) + "]"},
          {"sweep_group", group},
          {"sweep_point", {{"alpha", alpha}}},
          {"metrics", {{"max_abs", max_abs}, {"roundoff_allowance", roundoff}}}};
}
}  // namespace

TEST_CASE("an exact e^{-alpha} decay has slope -1; round-off points are left out", "[sweep_fit]") {
  json cases = json::array();
  for (double alpha : {2.0, 4.0, 8.0, 16.0}) cases.push_back(entry("decay", alpha, 3 * std::exp(-alpha), 1e-12));
  cases.push_back(entry("decay", 40.0, 1e-15, 1e-12));  // round-off: not used
  cases.push_back(entry("decay", 48.0, 0.0, 1e-12));    // exactly zero: not used
  cases.push_back({{"name", "single"}, {"sweep_group", "single"}, {"sweep_point", json::object()}, {"metrics", {{"max_abs", 1.0}}}});
  const json fits = attnconv::fit_sweeps(cases);
  REQUIRE(fits.size() == 1);
  CHECK(fits[0]["group"] == "decay");
  CHECK(fits[0]["swept_key"] == "alpha");
  CHECK(fits[0]["points_total"] == 6);
  CHECK(fits[0]["points_used"] == 4);
  CHECK(fits[0]["slope"].get<double>() == Approx(-1.0).epsilon(1e-12));
  CHECK(fits[0]["intercept"].get<double>() == Approx(std::log(3.0)).epsilon(1e-12));
}

TEST_CASE("a sweep over alpha and another key fits one line per value of the other key", "[sweep_fit]") {
  json cases = json::array();
  for (int seed : {1, 2})
    for (double alpha : {1.0, 2.0, 3.0}) {
      json e = entry("g", alpha, std::exp(-2 * alpha * seed), 0);
      e["sweep_point"]["seed"] = seed;
      cases.push_back(e);
    }
  const json fits = attnconv::fit_sweeps(cases);
  REQUIRE(fits.size() == 2);
  CHECK(fits[0]["group"] == "g[seed=1]");
  CHECK(fits[0]["slope"].get<double>() == Approx(-2.0));
  CHECK(fits[1]["slope"].get<double>() == Approx(-4.0));
}

TEST_CASE("fewer than two points above round-off: no slope", "[sweep_fit]") {
  json cases = json::array();
  cases.push_back(entry("flat", 40.0, 1e-15, 1e-12));
  cases.push_back(entry("flat", 48.0, 1e-15, 1e-12));
  const json fits = attnconv::fit_sweeps(cases);
  REQUIRE(fits.size() == 1);
  CHECK(fits[0]["points_used"] == 0);
  CHECK(fits[0]["slope"].is_null());
}
