#pragma once
// The ACmix module (Pan et al., CVPR 2022, Sec. 3.3), following its public
// reference code (LeapLabTHU/ACmix, ResNet/test_bottleneck.py, class ACmix) with
// the generalisations recorded in tests/fixtures/README.md: dep_conv padding
// k_conv // 2, output ceil(H/s) x ceil(W/s), dep_conv without bias unless one is
// given. docs/design.md, "ACmix module".
//   Stage I:   q, k, v = conv1(x), conv2(x), conv3(x)        (1x1, C_in -> C_out)
//   attention: per head, window k_att x k_att of reflection-padded k, v, pe
//   conv path: f = fc . [q heads; k heads; v heads]  then  dep_conv (groups = head_dim)
//   out = rate1 * attention + rate2 * convolution
#include <optional>

#include "acmix/op_counter.hpp"
#include "tensor/tensor.hpp"

namespace attnconv {

struct AcmixConfig {
  int in_channels = 0, out_channels = 0, heads = 1, kernel_att = 7, kernel_conv = 3, stride = 1;
  int head_dim() const { return out_channels / heads; }
  int output_size(int input) const { return (input + stride - 1) / stride; }  // ceil(H / s)
};

// Whether the attention path (and window_attention_loop) computes on an H x W map:
// heads >= 1 dividing C_out, k_att >= 1, stride >= 1, and the reflection padding
// k_att // 2 smaller than each side (PyTorch's ReflectionPad). Both refuse every other.
bool acmix_window_fits(const AcmixConfig& config, int height, int width);

// Parameters under their reference state_dict names (shapes without the 1x1 axes).
template <class T> struct AcmixWeights {
  Matrix<T> conv1_weight, conv2_weight, conv3_weight;  // (C_out, C_in): q, k, v
  Vector<T> conv1_bias, conv2_bias, conv3_bias;        // (C_out)
  Matrix<T> conv_p_weight;                             // (head_dim, 2)
  Vector<T> conv_p_bias;                               // (head_dim)
  Matrix<T> fc_weight;                                 // (k_conv^2, 3N), no bias
  Kernel<T> dep_conv_weight;                           // (C_out, k_conv^2, k_conv, k_conv)
  std::optional<Vector<T>> dep_conv_bias;              // absent in the reference (init_rate_0 returns None)
  T rate1 = T(0.5), rate2 = T(0.5);
};

template <class T> struct AcmixStage1 {
  Image<T> q, k, v;  // (C_out, H, W)
};

template <class T> struct AcmixOutput {
  Image<T> attention, convolution, output;  // (C_out, ceil(H/s), ceil(W/s)), before/after the rates
};

// Position map of the reference's position(): channel 0 = x = linspace(-1, 1, W)
// along the columns, channel 1 = y = linspace(-1, 1, H) along the rows.
template <class T> Image<T> position_map(int height, int width);

// Stage I: three 1x1 convolutions with bias; counts "stage1.projection".
template <class T> AcmixStage1<T> acmix_stage1(const AcmixWeights<T>& w, const Image<T>& x, OpCounter& counter);

// Attention path; counts "stage2.attention.*". Throws std::invalid_argument unless
// acmix_window_fits(config, H, W).
template <class T>
Image<T> acmix_attention_path(const AcmixConfig& config, const AcmixWeights<T>& w, const AcmixStage1<T>& s1,
                              OpCounter& counter);

// Convolution path; counts "stage2.conv.fc" and "stage2.conv.dep_conv".
template <class T>
Image<T> acmix_conv_path(const AcmixConfig& config, const AcmixWeights<T>& w, const AcmixStage1<T>& s1,
                         OpCounter& counter);

template <class T>
AcmixOutput<T> acmix_forward(const AcmixConfig& config, const AcmixWeights<T>& w, const Image<T>& x, OpCounter& counter);

// The reference's shift initialisation of dep_conv: weight[o, kk, a, b] = 1 iff
// (a, b) = (kk // k, kk % k), for every output channel o.
template <class T> Kernel<T> shift_dep_conv_weight(const AcmixConfig& config);

}  // namespace attnconv
