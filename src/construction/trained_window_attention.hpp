#pragma once
// A trained Swin window-attention layer (Liu et al., "Swin Transformer", ICCV
// 2021) as its two public forwards compute it (issue 23; docs/trained_attention.md,
// "Swin"): torchvision's ShiftedWindowAttention (x (N, H, W, D)) and
// microsoft/Swin-Transformer's WindowAttention inside its SwinTransformerBlock.
// With window M = [M1, M2] and shift s = [s1, s2]:
//  1. pad: the H x W grid is padded bottom/right with zero tokens to Hp x Wp,
//     multiples of M (torchvision; microsoft's classification model has no padding);
//  2. torchvision's rule: s_a = 0 on an axis where M_a >= the padded size
//     (microsoft sets shift 0 and M = min(H, W) when min(H, W) <= M at construction);
//  3. roll by -s: rolled position r holds the padded position (r + s) mod (Hp, Wp);
//  4. the non-overlapping M1 x M2 windows of the rolled map; in a window, query a
//     and key b (positions in the window, row-major n = b1 M2 + b2), head h:
//       score = (W_q^h x_a + b_q^h) · (W_k^h x_b + b_k^h) / √d
//               + table[index(a, b), h] + mask(a, b),
//       index(a, b) = (a1 − b1 + M1 − 1)(2 M2 − 1) + (a2 − b2 + M2 − 1)
//     (Swin's relative_position_index: query minus key), mask = −100 when s ≠ 0 and
//     the two rolled positions carry different labels of Swin's slices
//     [0, Lp − M), [Lp − M, Lp − s), [Lp − s, Lp) per axis (label 3 i + j), else 0;
//  5. P = softmax over the window's M1 M2 keys (padded keys included), o = Σ_b P v_b,
//     y = W_o o + b_o, rolled back by +s and cropped to H x W.
// A padded key is the zero token: its value is b_v. Since the window's P sums to
// one, y_q = Σ_h W_o^h (Σ_{k ∈ grid} P_h(q, k) W_v^h x_k + b_v^h) + b_o: the padded
// keys add nothing but their share of b_v, and with the grid's attention alone
// y_q = Σ_{k ∈ grid} K_q(k − q) x_k + b, b = W_o b_v + b_o, the folded bias of
// trained_attention.hpp, with rows of P that sum to 1 − (attention on padding).
#include <array>
#include <vector>

#include "construction/trained_attention.hpp"

namespace attnconv {

inline constexpr double swin_trained_mask_value = -100.0;  // Swin's finite mask (both codes)

template <class T> struct SwinWindowLayer {
  TorchAttention<T> attention;  // qkv.weight (3D, D), qkv.bias, proj.weight (D, D), proj.bias; heads
  Matrix<T> table;              // relative_position_bias_table ((2 M1 − 1)(2 M2 − 1), N_h)
  std::array<int, 2> window{};  // [M1, M2]
  std::array<int, 2> shift{};   // the module's shift [s1, s2], each in [0, M_a)
};

// The geometry of one call on an H x W grid: the padded map, and the shift after torchvision's rule.
struct WindowGeometry {
  std::array<int, 2> grid{}, padded{}, window{}, shift{};
};
WindowGeometry window_geometry(std::array<int, 2> grid, std::array<int, 2> window, std::array<int, 2> shift);

// Swin's relative_position_index of a query at window position a and a key at b.
int relative_position_index(std::array<int, 2> window, std::array<int, 2> a, std::array<int, 2> b);

// The label of Swin's mask of each rolled position of the padded map, row-major
// (all equal without a shift).
std::vector<int> shift_mask_labels(const WindowGeometry& g);

// The layer on grid tokens x (N, H·W, D), row-major: its output (N, H·W, D_out)
// and its attention P (N, N_h, H·W, H·W) between grid tokens (zero where a query
// does not see the key; a row sums to 1 minus its attention on padded tokens).
// Throws std::invalid_argument when shapes disagree.
template <class T>
AttentionForward<T> swin_window_forward(const SwinWindowLayer<T>& layer, const xt::xtensor<T, 3>& x,
                                        std::array<int, 2> grid);

}  // namespace attnconv
