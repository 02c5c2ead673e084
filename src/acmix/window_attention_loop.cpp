#include "acmix/window_attention_loop.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnconv {
namespace {

// PyTorch's ReflectionPad: mirror about the edge pixel without repeating it.
int reflect(int index, int size) {
  if (index < 0) return -index;
  if (index >= size) return 2 * (size - 1) - index;
  return index;
}

double coordinate(int index, int size) { return size == 1 ? -1.0 : -1.0 + 2.0 * index / (size - 1); }

}  // namespace

template <class T>
Image<T> window_attention_loop(const AcmixConfig& config, const AcmixWeights<T>& w, const Image<T>& x) {
  const int c_in = int(x.shape(0)), height = int(x.shape(1)), width = int(x.shape(2));
  if (!acmix_window_fits(config, height, width))
    throw std::invalid_argument("ACmix attention: heads must divide C_out and the reflection padding k_att // 2 = " +
                                std::to_string(config.kernel_att / 2) + " be smaller than each side of the " +
                                std::to_string(height) + " x " + std::to_string(width) + " map");
  const int c_out = config.out_channels, hd = config.head_dim(), ka = config.kernel_att, s = config.stride;
  const int half = ka / 2;

  // Stage I, pixel by pixel: q, k, v[c, i, j] = b[c] + sum_m W[c, m] x[m, i, j].
  const auto project = [&](const Matrix<T>& weight, const Vector<T>& bias, int c, int i, int j) {
    T sum = bias(c);
    for (int m = 0; m < c_in; ++m) sum += weight(c, m) * x(m, i, j);
    return sum;
  };
  const auto pe = [&](int d, int i, int j) {
    return w.conv_p_bias(d) + w.conv_p_weight(d, 0) * T(coordinate(j, width)) +
           w.conv_p_weight(d, 1) * T(coordinate(i, height));
  };
  const T scale = T(1) / std::sqrt(T(hd));

  Image<T> out({std::size_t(c_out), std::size_t(config.output_size(height)), std::size_t(config.output_size(width))});
  std::vector<T> score(std::size_t(ka * ka));
  for (int n = 0; n < config.heads; ++n)
    for (int oi = 0; oi < int(out.shape(1)); ++oi)
      for (int oj = 0; oj < int(out.shape(2)); ++oj) {
        const int qi = oi * s, qj = oj * s;
        T largest = -INFINITY;
        for (int a = 0; a < ka; ++a)
          for (int b = 0; b < ka; ++b) {
            const int ki = reflect(qi + a - half, height), kj = reflect(qj + b - half, width);
            T sum = 0;
            for (int d = 0; d < hd; ++d) {
              const int c = n * hd + d;
              const T query = project(w.conv1_weight, w.conv1_bias, c, qi, qj) * scale;
              const T key = project(w.conv2_weight, w.conv2_bias, c, ki, kj);
              sum += query * (key + pe(d, qi, qj) - pe(d, ki, kj));
            }
            score[std::size_t(a * ka + b)] = sum;
            if (sum > largest) largest = sum;
          }
        T total = 0;
        for (auto& value : score) total += (value = std::exp(value - largest));
        for (int d = 0; d < hd; ++d) {
          const int c = n * hd + d;
          T sum = 0;
          for (int a = 0; a < ka; ++a)
            for (int b = 0; b < ka; ++b) {
              const int ki = reflect(qi + a - half, height), kj = reflect(qj + b - half, width);
              sum += score[std::size_t(a * ka + b)] / total * project(w.conv3_weight, w.conv3_bias, c, ki, kj);
            }
          out(c, oi, oj) = sum;
        }
      }
  return out;
}

template Image<float> window_attention_loop(const AcmixConfig&, const AcmixWeights<float>&, const Image<float>&);
template Image<double> window_attention_loop(const AcmixConfig&, const AcmixWeights<double>&, const Image<double>&);

}  // namespace attnconv
