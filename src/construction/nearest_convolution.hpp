#pragma once
// How convolutional an attention layer is (docs/design.md, "Nearest
// convolution"). For positional-only heads and a query whose keys all exist,
// Eq. 8 of Cordonnier et al. (ICLR 2020) is exactly a convolution over the
// offsets δ = key − query,
//   MHSA(X)_q = Σ_δ W_eff[:, :, δ] X_{q+δ} + b_out,
//   W_eff[:, :, δ] = Σ_h P_h(δ) (W_val^h W_out^h)ᵀ,
// with P_h(δ) head h's attention at offset δ. Its nearest K1 × K2 convolution
// keeps the K1 × K2 window of offsets δ ∈ [−c1, K1−1−c1] × [−c2, K2−1−c2],
// c = kernel_center(K) (the taps of the Theorem 1 construction). Per head: the
// tap nearest its centre Δ_h, the distance to it, the attention off the tap
// (leak) and outside the window (mass_outside).
//
// The attention over offsets is held as an (N_h, R1, R2) array `p` with the
// offset δ = 0 at index `origin`: p(h, a, b) is P_h(δ) for
// δ = (a − origin[0], b − origin[1]). The attention row of query pixel q over
// an R1 × R2 image (attention_rows, reshaped) is exactly that, origin = q.
#include <array>
#include <vector>

#include "tensor/tensor.hpp"

namespace attnconv {

template <class T> using OffsetWeights = xt::xtensor<T, 3>;  // (N_h, R1, R2): P_h over offsets

// W_eff (D_out, D_in, R1, R2) from the attention over offsets `p` (N_h, R1, R2),
// w_val (N_h, D_in, D_h) and w_out (N_h·D_h, D_out), the rows h·D_h … (h+1)·D_h − 1
// of w_out being head h's (Lemma 1). Same origin as `p`. Sums in double.
template <class T>
Kernel<T> equivalent_kernel(const OffsetWeights<T>& p, const xt::xtensor<T, 3>& w_val, const Matrix<T>& w_out);

// The offsets of the K1 × K2 window: rows [−c1, K1−1−c1], columns [−c2, K2−1−c2].
struct OffsetWindow {
  std::array<int, 2> first{0, 0}, last{0, 0};
  bool contains(std::array<int, 2> delta) const;
};
OffsetWindow kernel_window(std::array<int, 2> kernel);

// The nearest K1 × K2 convolution's weight (D_out, D_in, K1, K2): W_eff on the
// window (tap (p, q) ↔ δ = (p − c1, q − c2)). Throws std::invalid_argument when
// the window does not fit the offsets of w_eff around `origin`.
template <class T> Kernel<T> window_kernel(const Kernel<T>& w_eff, std::array<int, 2> origin, std::array<int, 2> kernel);

// One head against the window.
struct HeadTap {
  std::array<int, 2> tap{0, 0};  // the grid offset nearest Δ_h (halves rounded away from zero)
  double center_distance = 0;    // |Δ_h − tap| (Euclidean, pixels)
  double leak = 0;               // 1 − P_h(tap); 1 when the tap is not among the offsets
  double mass_outside = 0;       // 1 − Σ_{δ in window} P_h(δ)
  bool in_window = false;        // the tap is one of the window's
};

// centers (N_h, 2): each head's Δ_h in (row, column).
template <class T>
std::vector<HeadTap> head_taps(const OffsetWeights<T>& p, std::array<int, 2> origin, const Matrix<double>& centers,
                               std::array<int, 2> kernel);

// Taps of the window no head is nearest to, and taps two or more heads are nearest to.
struct TapCoverage {
  int uncovered = 0, shared = 0;
};
TapCoverage tap_coverage(const std::vector<HeadTap>& heads, std::array<int, 2> kernel);

// The smallest window (least K1·K2, then least max(K1, K2), then least K1)
// holding at least `mass` of every head's attention, among those that fit the
// offsets around `origin`; the largest that fits when none holds enough.
template <class T> std::array<int, 2> smallest_window(const OffsetWeights<T>& p, std::array<int, 2> origin, double mass);

}  // namespace attnconv
