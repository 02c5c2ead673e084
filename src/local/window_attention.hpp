#pragma once
// Swin's window attention (Liu et al., "Swin Transformer", ICCV 2021), as its
// public code computes it (microsoft/Swin-Transformer, models/swin_transformer.py,
// WindowAttention and SwinTransformerBlock; the image padded bottom/right to a
// multiple of M as in its detection and segmentation code), and the rewrite of
// Han et al. (ICLR 2022, "On the Connection between Local Attention and Dynamic
// Depth-wise Convolution") as a locally connected layer. docs/design.md, "Local attention".
//
// A window is M1 x M2 (rows, columns; WindowAttention's window_size (Wh, Ww)),
// M x M the square one of SwinTransformerBlock. On a padded Hp x Wp map (Hp a
// multiple of M1, Wp of M2), shift s = (s1, s2) (0: W-MSA; M // 2: SW-MSA):
//   rolled pixel r holds pixel (r + s) mod (Hp, Wp)                  (torch.roll by -s)
//   windows:  the non-overlapping M1 x M2 blocks of the rolled map
//   score     q_query . k_key + table[index(query, key), h] + mask(query, key)
//             index = (a1 - b1 + M1 - 1)(2 M2 - 1) + (a2 - b2 + M2 - 1), a = query's and
//             b = key's position in the window: Swin's relative_position_index is
//             indexed by query - key = -delta
//             mask  = -100 when s != 0 and the two rolled pixels lie in different
//             regions of Swin's img_mask, 0 otherwise (a finite mask, as in Swin)
//   output    sum_key softmax(score) v_key, written back at the un-rolled pixel.
#include <array>
#include <vector>

#include "local/head_tensor.hpp"
#include "tensor/tensor.hpp"

namespace attnconv {

inline constexpr double swin_mask_value = -100.0;

// (rows, columns): a window M1 x M2, or a shift (s1, s2).
using Extent2 = std::array<int, 2>;

// Whether Swin's windows tile the padded map: window M_i >= 1, shift in [0, M_i), Hp and
// Wp multiples of M1 and M2. swin_window_attention and swin_attention_weights refuse every other.
bool swin_window_fits(int height, int width, Extent2 window, Extent2 shift);
bool swin_window_fits(int height, int width, int window, int shift);

// Swin's relative_position_index entry of a query and a key at window positions a, b.
int swin_bias_index(Extent2 window, std::array<int, 2> a, std::array<int, 2> b);
int swin_bias_index(int window, std::array<int, 2> a, std::array<int, 2> b);

// Swin's img_mask on the rolled Hp x Wp map, row-major: the region label of each
// rolled pixel (slices [0, Hp - M1), [Hp - M1, Hp - s1), [Hp - s1, Hp) of the rows,
// the same with M2, s2 of the columns; an axis without shift is one slice;
// label = 3 * row slice + column slice). All zero for s = 0.
std::vector<int> swin_regions(int height, int width, Extent2 window, Extent2 shift);
std::vector<int> swin_regions(int height, int width, int window, int shift);

// q, k: (heads, Hp, Wp, D_k); v: (heads, Hp, Wp, D_v); table: ((2 M1 - 1)(2 M2 - 1), heads).
// Window by window, as Swin does. Throws std::invalid_argument on shapes, an
// Hp, Wp that is not a multiple of M1, M2, or a shift outside [0, M) per axis.
template <class T>
HeadMaps<T> swin_window_attention(const HeadMaps<T>& q, const HeadMaps<T>& k, const HeadMaps<T>& v,
                                  const Matrix<T>& table, Extent2 window, Extent2 shift);
template <class T>
HeadMaps<T> swin_window_attention(const HeadMaps<T>& q, const HeadMaps<T>& k, const HeadMaps<T>& v,
                                  const Matrix<T>& table, int window, int shift);

// Han et al.'s reading of the same layer: per head h and pixel p, the weights
// w[h, p1, p2, delta1 + M1 - 1, delta2 + M2 - 1] of the keys at p + delta
// (cyclically, mod (Hp, Wp): the shifted windows wrap) - the attention map -
// zero for offsets outside p's window. Shape (heads, Hp, Wp, 2 M1 - 1, 2 M2 - 1).
template <class T>
xt::xtensor<T, 5> swin_attention_weights(const HeadMaps<T>& q, const HeadMaps<T>& k, const Matrix<T>& table,
                                         Extent2 window, Extent2 shift);
template <class T>
xt::xtensor<T, 5> swin_attention_weights(const HeadMaps<T>& q, const HeadMaps<T>& k, const Matrix<T>& table,
                                         int window, int shift);

// The locally connected layer (dynamic depth-wise convolution) with those
// weights, shared by the channels of a head:
//   out[h, p, c] = sum_delta w[h, p, delta] v[h, (p + delta) mod (Hp, Wp), c].
template <class T> HeadMaps<T> locally_connected(const xt::xtensor<T, 5>& weights, const HeadMaps<T>& v);

}  // namespace attnconv
