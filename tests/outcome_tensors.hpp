#pragma once
// A proof's Outcome in tests: one of its dumped tensors by name, and the
// largest elementwise difference of two tensors of one shape.
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <variant>
#include <xtensor/xarray.hpp>
#include <xtensor/xmath.hpp>

#include "proof/proof.hpp"

namespace attnconv::testing {

inline const xt::xarray<double>& tensor(const Outcome& out, const std::string& name) {
  for (const auto& t : out.tensors)
    if (t.name == name) return std::get<xt::xarray<double>>(t.data);
  throw std::runtime_error("no tensor " + name);
}

inline double max_difference(const xt::xarray<double>& a, const xt::xarray<double>& b) {
  REQUIRE(a.shape() == b.shape());
  return xt::amax(xt::abs(a - b))();
}

}  // namespace attnconv::testing
