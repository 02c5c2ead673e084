#pragma once
// Tensor aliases. Every interface uses PyTorch layout: an image is (C, H, W),
// a convolution weight (C_out, C_in, K1, K2), a bias (C_out). Internally the
// MHSA works on tokens: pixels in row-major order, token index = i*W + j.
#include <xtensor/xtensor.hpp>

#include <cstddef>
#include <vector>

namespace attnconv {

template <class T> using Vector = xt::xtensor<T, 1>;
template <class T> using Matrix = xt::xtensor<T, 2>;
template <class T> using Image = xt::xtensor<T, 3>;   // (C, H, W)
template <class T> using Kernel = xt::xtensor<T, 4>;  // (C_out, C_in, K1, K2)
template <class T> using Sequence = xt::xtensor<T, 2>;  // (C, L)
template <class T> using Kernel1d = xt::xtensor<T, 3>;  // (C_out, C_in, K)

// (C, H, W) image -> (H*W, C) token matrix, and back.
template <class T> Matrix<T> image_to_tokens(const Image<T>& x);
template <class T> Image<T> tokens_to_image(const Matrix<T>& tokens, std::size_t height, std::size_t width);

// The kernel slices as the MHSA uses them, position p K2 + q at index p K2 + q:
// W_conv[:, :, p, q]^T, C_in x C_out (Cordonnier et al., Eq. 9: the W_val^h W_out^h
// of the head for (p, q)). Copies, all made in one pass over the kernel.
template <class T> std::vector<Matrix<T>> kernel_slices_t(const Kernel<T>& w);
// The same slices untransposed, W_conv[:, :, p, q], C_out x C_in (a grouped kernel's
// C_out x C_in/groups): the 1x1 convolutions of ACmix's Stage I (Pan et al., Sec. 3.1).
template <class T> std::vector<Matrix<T>> kernel_slices(const Kernel<T>& w);

}  // namespace attnconv
