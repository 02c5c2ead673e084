#pragma once
// The 2D convolution of docs/design.md, "Convolution" (cross-correlation, as in PyTorch),
//   y[o,i,j] = b[o] + sum_{c,p,q} W[o,c,p,q] * xpad[c, i*s1 + p*d1, j*s2 + q*d2],
// as OpenBLAS products over fixed blocks of output rows (single-threaded BLAS per
// block; blocks spread over engine_threads()), in one of two forms:
//   - shifted: stride 1. For each tap (p, q), Y[:, block] += W[:, :, p, q] X_pq, a
//     (C_out x C_in) by (C_in x block) product whose right factor is the padded input
//     itself shifted by (p d1, q d2): no patches are copied (the K1 K2 shifted 1 x 1
//     convolutions of ACmix, docs/design.md "ACmix decomposition"). The block runs
//     over whole padded rows, and the K2 - 1 columns past each output row are dropped.
//   - im2col: any stride. The patches cols[(c,p,q), (i,j)] = xpad[c, i*s1 + p*d1, j*s2 + q*d2]
//     of a block are gathered (<= 8 MiB, at least one output row) and
//     Y[:, block] = b + W cols is one (C_out x C_in K1 K2) by (C_in K1 K2 x block) product.
// Per group of channels, one product each (docs/design.md, "Groups").
// The same sum in BLAS's order, not b, c, p, q: within round-off of
// reference::conv2d (tests/unit/test_fast_paths.cpp), bit-identical for any thread
// count (the form and the blocks depend on the shapes alone). Memory beyond the
// padded input and the output: per thread one block of sums (shifted, about 512 KiB)
// or of patches (im2col, <= 8 MiB), and the shifted form's copy of the weight.
#include <optional>

#include "ops/geometry.hpp"

namespace attnconv {

enum class ConvGemmForm { automatic, shifted, im2col };

// Whether conv2d_gemm computes `form` for this geometry: the shifted form needs
// stride 1; automatic and im2col take every geometry.
bool conv2d_gemm_accepts(ConvGemmForm form, const ConvGeometry& geometry);

// The form conv2d_gemm computes with for an input `input_width` wide and a kernel
// `kernel_width` wide: `form` itself unless automatic, which picks shifted for stride 1
// when the dropped columns are at most a quarter of an output row
// (W_out >= 4 d2 (K2 - 1)), im2col otherwise.
ConvGemmForm conv2d_gemm_form(ConvGemmForm form, const ConvGeometry& geometry, int input_width, int kernel_width);

// Throws std::invalid_argument unless conv2d_gemm_accepts(form, geometry).
template <class T>
Image<T> conv2d_gemm(const Image<T>& x, const Kernel<T>& weight, const std::optional<Vector<T>>& bias,
                     const ConvGeometry& geometry, ConvGemmForm form = ConvGemmForm::automatic);

}  // namespace attnconv
