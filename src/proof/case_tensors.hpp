#pragma once
// The tensors of a case: loaded from its "weights" entry (a .npy file of
// exactly the shape asked for) or drawn uniform in [-1, 1) from its seed, one
// random stream per tensor name, so a tensor does not change when another is
// loaded or added.
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "proof/npy.hpp"
#include "proof/proof.hpp"
#include "tensor/random.hpp"
#include "tensor/tensor.hpp"

namespace attnconv {

class CaseTensors {
 public:
  CaseTensors(const Case& c, std::uint64_t seed) : case_(c), random_(seed) {}

  template <class T, std::size_t N> xt::xtensor<T, N> get(const char* key, const std::array<std::size_t, N>& shape) const {
    if (has_case_tensor(case_, key))
      return xt::xtensor<T, N>(load_case_tensor<T>(case_, key, std::vector<std::size_t>(shape.begin(), shape.end())));
    return random_.stream(purpose_id(key)).uniform_tensor<T, N>(shape);
  }

  // The convolution's bias "conv_bias" of c_out values, or none without `bias`.
  template <class T> std::optional<Vector<T>> conv_bias(bool bias, std::size_t c_out) const {
    if (!bias) return std::nullopt;
    return get<T, 1>("conv_bias", {c_out});
  }

 private:
  const Case& case_;
  Random random_;
};

// The tensors a convolution proof dumps (--dump-tensors): input, expected,
// actual, conv_weight, conv_bias (zeros when the convolution has no bias); only
// expected and actual outside a dump (DumpedTensors, proof/proof.hpp).
template <class T, class X, class Y, class W>
std::vector<NamedTensor> conv_tensors(const X& x, const Y& expected, const Y& actual, const W& w,
                                      const std::optional<Vector<T>>& b) {
  const std::size_t c_out = w.shape(0);
  if (!DumpedTensors::wanted()) return {{"expected", xt::xarray<T>(expected)}, {"actual", xt::xarray<T>(actual)}};
  return {{"input", xt::xarray<T>(x)},
          {"expected", xt::xarray<T>(expected)},
          {"actual", xt::xarray<T>(actual)},
          {"conv_weight", xt::xarray<T>(w)},
          {"conv_bias", xt::xarray<T>(b ? *b : Vector<T>(xt::zeros<T>({c_out})))}};
}

}  // namespace attnconv
