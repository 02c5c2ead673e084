#pragma once
// What the local-attention proofs (neighborhood attention, Swin windows, ACmix's
// windows) share: Theorem 1's construction read as per-head value maps and a
// relative position bias (docs/design.md, "Local attention"), and the border
// band of a per-pixel difference.
#include <array>
#include <optional>
#include <vector>

#include "construction/theorem1.hpp"
#include "proof/proof.hpp"
#include "local/head_tensor.hpp"
#include "mhsa/mhsa_layer.hpp"
#include "proof/case_tensors.hpp"
#include "proof/common_params.hpp"
#include "border_band.hpp"
#include "theorem1_common.hpp"

namespace attnconv {

// K of a K x K kernel with K odd (a centred neighbourhood); throws ParamError("kernel").
int square_odd_kernel(const ConvShape& shape);

// A local-attention case's convolution and Theorem 1's construction for it:
// input, conv_weight, conv_bias from the case; `expected` the zero-padded
// "same" convolution with dilation d (reference::conv2d); the layer of
// theorem1_layer with heads = K^2, head_dim = C_out, the case's alpha and
// dilation 1 (the bias measures offsets in units of d).
template <class T> struct LocalConvCase {
  Image<T> x;
  Kernel<T> w;
  std::optional<Vector<T>> b;
  Image<T> expected;
  Theorem1Options options;
  MhsaLayer<T> layer;
};
template <class T>
LocalConvCase<T> local_conv_case(const CaseTensors& tensors, const ConvShape& shape, const Theorem1Shared& shared,
                                 int dilation);

// The tensors such a case may load: input, conv_weight, conv_bias (with bias).
TensorShapes local_conv_tensor_shapes(const ConvShape& shape, bool bias);

// Per-head content maps q = X W_qry^h, k = X W_key^h of a (C, H, W) image, W (heads, C, D_k).
template <class T> struct ContentMaps {
  HeadMaps<T> q, k;
};
template <class T>
ContentMaps<T> content_maps(const Image<T>& x, const xt::xtensor<T, 3>& w_qry, const xt::xtensor<T, 3>& w_key);

// Head h's values X W_val^h of a (C, H, W) image: (heads, H, W, D_h).
template <class T> HeadMaps<T> head_values(const MhsaLayer<T>& layer, const Image<T>& x);

// concat_h(SA_h) W_out + b_out of per-head outputs (heads, H, W, D_h), as a (D_out, H, W) image.
template <class T> Image<T> project_heads(const MhsaLayer<T>& layer, const HeadMaps<T>& heads);

// Cordonnier's positional score as a bias: -alpha |delta - Delta|^2 (the
// construction's score up to a constant per head, which the softmax drops).
double quadratic_bias(std::array<int, 2> delta, std::array<int, 2> target, double alpha);


// A first-order round-off allowance for a softmax-weighted sum computed two
// ways (gamma_n = n u, Higham 2002 §3.1): each score is a sum of at most
// `score_terms` terms (the subtraction of the maximum and the exp included) of
// magnitude at most `score_scale` in all, so its exponent errs by at most
// score_terms u score_scale, which moves a weighted average by at most twice
// that times the largest |value|; each output is a sum of at most `sum_terms`
// terms of magnitude at most `abs_scale` in all. Both computations err, hence the factor 2:
//   2 u (2 score_terms score_scale value_scale + sum_terms abs_scale).
double softmax_roundoff(double score_terms, double sum_terms, double unit_roundoff, double score_scale,
                        double value_scale, double abs_scale);

}  // namespace attnconv
