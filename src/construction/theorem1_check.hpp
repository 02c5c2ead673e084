#pragma once
// One run of the Theorem 1 construction against the convolution (conv2d_gemm, a fast path of reference::conv2d),
// shared by every proof of the claim (2D, 1D as a 1 x L image, the padding
// remark): build the layer, attend over the padded image, crop and subsample
// (docs/design.md, "Padding, stride, dilation"), and measure the finite-alpha bound.
#include <functional>
#include <optional>

#include "construction/finite_alpha.hpp"
#include "construction/theorem1.hpp"
#include "mhsa/query_grid.hpp"
#include "ops/conv2d_gemm.hpp"

namespace attnconv {

// An MHSA engine: (layer, tokens of an H x W image, H, W) -> output tokens.
// Each proof passes the engine it uses (mhsa_dense today) in exactly one place.
template <class T>
using MhsaEngine = std::function<Matrix<T>(const MhsaLayer<T>&, const Matrix<T>&, std::size_t, std::size_t)>;

// An MHSA engine that computes only the outputs at `queries` (mhsa/query_grid.hpp):
// (layer, tokens of an H x W image, H, W, queries) -> (queries.size()) x D_out.
template <class T>
using MhsaGridEngine =
    std::function<Matrix<T>(const MhsaLayer<T>&, const Matrix<T>&, std::size_t, std::size_t, const QueryGrid&)>;

// The queries of the padded image whose outputs a convolution of this geometry
// keeps: (i s1 + c1 d1, j s2 + c2 d2) for the output pixel (i, j), c = kernel_center.
QueryGrid convolution_queries(std::array<int, 2> kernel, const ConvGeometry& geometry, std::array<int, 2> output_size);

// The MHSA output of a whole (C, H, W) image, as an image.
template <class T> Image<T> mhsa_image(const MhsaLayer<T>& layer, const Image<T>& x, const MhsaEngine<T>& engine);

// The smallest eigenvalue of the positional precision of the construction
// (1 for the quadratic encodings; min over heads of A's for quadratic_general).
double precision_lambda_min(const Theorem1Options& options, int kernel_positions);

// The finite-alpha bound of the construction `layer` (made by theorem1_layer
// with `options` for a kernel of size `kernel`) on an H x W image.
template <class T>
FiniteAlphaBound construction_bound(const MhsaLayer<T>& layer, const Matrix<T>& tokens, std::size_t height,
                                   std::size_t width, std::array<int, 2> kernel, const Theorem1Options& options);

template <class T> struct Theorem1Check {
  Image<T> expected;        // conv2d_gemm: the convolution to match
  Image<T> actual;          // the MHSA of the padded image, aligned to `expected`
  // The slices M_h = W[:, :, p, q]^T (D_in x D_out, h = p K2 + q) of the
  // convolution's weight, dense (ops/dense_kernel.hpp: block-diagonal for
  // groups > 1), made once for the construction and the weight distance.
  std::vector<Matrix<T>> slices;
  // |W|_F of the dense weight, in double, when the layer cannot express it
  // (not expresses_kernel): what a predicted failure's
  // round-off allowance scales with.
  std::optional<double> weight_norm;
  MhsaLayer<T> layer;       // the construction, of the slices
  FiniteAlphaBound bound;   // on the padded image
};

// w_conv is (C_out, C_in/groups, K1, K2), groups = geometry.groups; the
// construction expresses its dense form, whose slices are block-diagonal.
template <class T>
Theorem1Check<T> check_theorem1(const Image<T>& x, const Kernel<T>& w_conv, const std::optional<Vector<T>>& bias,
                                const ConvGeometry& geometry, const Theorem1Options& options,
                                const MhsaEngine<T>& engine);

// The same check with an engine that attends only at convolution_queries(): a
// strided layer computes only the outputs it keeps (no align_to_convolution).
template <class T>
Theorem1Check<T> check_theorem1(const Image<T>& x, const Kernel<T>& w_conv, const std::optional<Vector<T>>& bias,
                                const ConvGeometry& geometry, const Theorem1Options& options,
                                const MhsaGridEngine<T>& engine);

}  // namespace attnconv
