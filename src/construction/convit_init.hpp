#pragma once
// ConViT's local initialisation of GPSA (d'Ascoli et al., ICML 2021, Sec. 3;
// facebookresearch/convit, convit.py, GPSA.local_init): N_h = K^2 heads, head
// h = h1 + K h2 (h1, h2 in [0, K)) with centre Delta_h = (h1 - c, h2 - c),
// c = (K - 1) / 2 (a half-integer for an even K), locality distance 1, and
//   v_pos^h = locality_strength (2 Delta_h1, 2 Delta_h2, -1),
// so v_pos^h . r_delta = -locality_strength (|delta - Delta_h|^2 - |Delta_h|^2):
// Theorem 1's construction with alpha = locality_strength. Values W_val = I,
// gating lambda_h = 1 (sigma = 0.731).
#include "mhsa/gpsa.hpp"

namespace attnconv {

// K with K^2 = heads; throws std::invalid_argument when heads is not a square.
std::size_t convit_kernel_size(std::size_t heads);

// Delta_h (N_h, 2) in (row, column), and v_pos (N_h, 3) for a locality strength.
Matrix<double> convit_centers(std::size_t heads);
template <class T> Matrix<T> convit_v_pos(std::size_t heads, double locality_strength);

}  // namespace attnconv
