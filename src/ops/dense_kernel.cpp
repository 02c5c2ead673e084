#include "ops/dense_kernel.hpp"

#include <xtensor/xview.hpp>

#include "ops/geometry.hpp"

namespace attnconv {

template <class T> Kernel<T> dense_kernel(const Kernel<T>& weight, int groups) {
  const std::size_t c_out = weight.shape(0), group_in = weight.shape(1), c_in = group_in * std::size_t(groups);
  group_in_channels(c_in, c_out, group_in, groups, "dense_kernel");
  if (groups == 1) return weight;
  const std::size_t group_out = c_out / std::size_t(groups);
  Kernel<T> dense = xt::zeros<T>({c_out, c_in, weight.shape(2), weight.shape(3)});
  for (std::size_t o = 0; o < c_out; ++o) {
    const std::size_t first = (o / group_out) * group_in;
    xt::view(dense, o, xt::range(first, first + group_in), xt::all(), xt::all()) = xt::view(weight, o);
  }
  return dense;
}

template Kernel<float> dense_kernel(const Kernel<float>&, int);
template Kernel<double> dense_kernel(const Kernel<double>&, int);

}  // namespace attnconv
