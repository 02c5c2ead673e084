#pragma once
// The floating-point type a case runs in ("dtype": "float32" | "float64") and
// the one dispatch from it to a C++ type.
#include <cstddef>
#include <string>

namespace attnconv {

enum class Dtype { float32, float64 };

Dtype dtype_from_string(const std::string& name);  // "float32" | "float64"; throws std::invalid_argument
std::string to_string(Dtype dtype);
std::size_t dtype_bytes(Dtype dtype);  // 4 | 8

// Calls fn(float{}) or fn(double{}).
template <class Fn> auto with_dtype(Dtype dtype, Fn&& fn) {
  return dtype == Dtype::float32 ? fn(float{}) : fn(double{});
}

}  // namespace attnconv
