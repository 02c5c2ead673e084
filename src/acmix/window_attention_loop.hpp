#pragma once
// An independent, plainly written statement of the ACmix attention path, used
// only to check acmix_attention_path: its own Stage I loops, its own position
// features pe[d, i, j] = b_p[d] + W_p[d, 0] * x_j + W_p[d, 1] * y_i with
// x_j = -1 + 2j/(W-1), y_i = -1 + 2i/(H-1), its own reflection index, and one
// query pixel at a time.
#include "acmix/acmix_module.hpp"

namespace attnconv {

// Throws std::invalid_argument unless acmix_window_fits(config, H, W).
template <class T>
Image<T> window_attention_loop(const AcmixConfig& config, const AcmixWeights<T>& w, const Image<T>& x);

}  // namespace attnconv
