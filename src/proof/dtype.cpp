#include "proof/dtype.hpp"

#include <stdexcept>

namespace attnconv {

Dtype dtype_from_string(const std::string& name) {
  if (name == "float32") return Dtype::float32;
  if (name == "float64") return Dtype::float64;
  throw std::invalid_argument("unknown dtype '" + name + "'");
}

std::string to_string(Dtype dtype) { return dtype == Dtype::float32 ? "float32" : "float64"; }

std::size_t dtype_bytes(Dtype dtype) { return dtype == Dtype::float32 ? 4 : 8; }

}  // namespace attnconv
