#pragma once
// Cordonnier et al. (ICLR 2020), Theorem 1 and its proof: the parameters of an
// MHSA layer (quadratic encoding, D_p = 3; or the 1D and generalised quadratic
// encodings) that express a given K1 x K2 convolution, and the pad-then-crop-and-subsample alignment of the paper's
// remarks on padding, stride and dilation.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "mhsa/mhsa_layer.hpp"
#include "ops/geometry.hpp"

namespace attnconv {

// A 2 x 2 symmetric positive definite precision matrix {a11, a12, a22}.
struct Precision2 {
  double a11 = 1, a12 = 0, a22 = 1;
  double smallest_eigenvalue() const;
};

// Seeded random SPD precisions with unit smallest eigenvalue, one per head:
// A = R(theta) diag(1, lambda2) R(theta)^T, theta uniform in [0, pi),
// lambda2 uniform in [1, 4). The same seed gives the same matrices.
std::vector<Precision2> random_precisions(std::uint64_t seed, int count);

struct Theorem1Options {
  int heads = 0;     // N_h; heads beyond K1*K2 are silent (W_val = 0)
  int head_dim = 0;  // D_h; below min(D_in, D_out) each kernel slice is factored by truncated SVD
  double alpha = 0;  // the attention sharpness
  std::array<int, 2> dilation{1, 1};
  // quadratic (D_p = 3, the theorem), quadratic_1d (D_p = 2, needs K1 = 1: a
  // sequence is a 1 x L image) or quadratic_general (D_p = 5, one precision per head).
  Encoding encoding = Encoding::quadratic;
  std::vector<Precision2> precision;  // quadratic_general: A of head h (at least K1*K2 of them)
};

// Kernel centre c = ((K1-1)//2, (K2-1)//2) (for an even K the centre is the
// tap before the middle) and the target shift Delta = ((p - c1) d1, (q - c2) d2)
// of the head of kernel tap (p, q) (docs/design.md, "Kernel taps and target shifts").
std::array<int, 2> kernel_center(std::array<int, 2> kernel);
std::array<int, 2> target_shift(int p, int q, std::array<int, 2> kernel, std::array<int, 2> dilation);

// The construction of the proof of Theorem 1. Head h = p*K2 + q (h < heads)
// is assigned kernel position (p, q); W_qry = W_key = 0, u = 0, W^_key = I_{D_p} (D_k = D_p),
//   v = -alpha (1, -2 Delta1, -2 Delta2, 0, ...)  =>  A_qk = -alpha(|delta - Delta|^2 - |Delta|^2),
// and W_val^(h) W_out^(h) = W_conv[:, :, p, q]^T (exactly when D_h >= min(D_in, D_out),
// one factor [I, 0] or [I; 0]; best rank-D_h otherwise). b_out = the convolution bias.
// Kernel positions without a head (heads < K1*K2) are simply not expressed.
// The other encodings put the same Gaussian bump through their own r_delta:
//   quadratic_1d       r = (delta^2, delta):  v = -alpha (1, -2 Delta)
//   quadratic_general  r = (d1^2, d2^2, d1 d2, d1, d2), precision alpha A:
//     v = -alpha (a11, a22, 2 a12, -2 (A Delta)_1, -2 (A Delta)_2)
//     =>  A_qk = -alpha ((delta - Delta)^T A (delta - Delta) - Delta^T A Delta)
template <class T>
MhsaLayer<T> theorem1_layer(const Kernel<T>& w_conv, const std::optional<Vector<T>>& bias,
                            const Theorem1Options& options);

// The same layer from the kernel's slices M_h = W_conv[:, :, p, q]^T (D_in x
// D_out, h = p K2 + q; kernel_slices_t), for a caller that keeps them.
template <class T>
MhsaLayer<T> theorem1_layer(const std::vector<Matrix<T>>& slices, std::array<int, 2> kernel,
                            const std::optional<Vector<T>>& bias, const Theorem1Options& options);

// The head_dim the construction needs: a head expresses one kernel slice
// W[:, :, p, q] (C_out x C_in) as W_val W_out of rank <= D_h, and a slice has
// rank <= min(C_in, C_out), generically equal; a grouped slice is
// block-diagonal with the same bound (docs/design.md, "Groups").
inline int needed_head_dim(int in_channels, int out_channels) { return std::min(in_channels, out_channels); }

// Whether the layer expresses the kernel exactly (Theorem 1's hypotheses): a
// head per kernel position and head_dim >= needed_head_dim.
inline bool expresses_kernel(const Theorem1Options& options, int positions, int in_channels, int out_channels) {
  return options.heads >= positions && options.head_dim >= needed_head_dim(in_channels, out_channels);
}

// Eckart-Young: sqrt(sum over kernel positions of the squared singular values
// of W[:, :, p, q] beyond rank `head_dim`) - the distance to the convolution
// weight that no choice of W_val, W_out with D_h = head_dim can beat.
template <class T> double eckart_young_tail(const Kernel<T>& w_conv, int head_dim);
template <class T> double eckart_young_tail(const std::vector<Matrix<T>>& slices, int head_dim);

// The MHSA output of the padded image, read at padded coordinates
// (i*s1 + c1*d1, j*s2 + c2*d2): crop plus subsample, aligned to the convolution.
template <class T>
Image<T> align_to_convolution(const Image<T>& mhsa_on_padded, std::array<int, 2> kernel,
                              const ConvGeometry& geometry, std::array<int, 2> output_size);

}  // namespace attnconv
