#include "acmix/grouped_conv.hpp"

#include "reference/conv.hpp"

namespace attnconv {

template <class T>
Image<T> grouped_conv2d(const Image<T>& x, const Kernel<T>& weight, const std::optional<Vector<T>>& bias, int groups,
                        const ConvGeometry& g, OpCounter& counter, const std::string& label) {
  ConvGeometry grouped = g;
  grouped.groups = groups;
  Image<T> y = reference::conv2d(x, weight, bias, grouped);
  counter.add(label, std::int64_t(weight.shape(0)) * std::int64_t(weight.shape(1) * weight.shape(2) * weight.shape(3)) *
                         std::int64_t(y.shape(1) * y.shape(2)));
  return y;
}

template Image<float> grouped_conv2d(const Image<float>&, const Kernel<float>&, const std::optional<Vector<float>>&, int,
                                     const ConvGeometry&, OpCounter&, const std::string&);
template Image<double> grouped_conv2d(const Image<double>&, const Kernel<double>&,
                                      const std::optional<Vector<double>>&, int, const ConvGeometry&, OpCounter&,
                                      const std::string&);

}  // namespace attnconv
