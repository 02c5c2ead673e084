#pragma once
// How C channels are split between N_h heads that share one kernel (or one
// attention map). fairseq (facebookresearch/fairseq, modules/lightweight_convolution.py)
// has both: LightweightConv1dTBC views (T, B, C) as (T, B * N_h, C / N_h), so
// head h holds the contiguous channels c with h = c // (C / N_h);
// LightweightConv1d views (B, C, T) as (B * C / N_h, N_h, T), so h = c mod N_h
// (interleaved). docs/positional_encodings.md, "fairseq's two classes".
#include <cstddef>

namespace attnconv {

enum class HeadLayout {
  contiguous,   // LightweightConv1dTBC: h = c // (C / N_h)
  interleaved,  // LightweightConv1d:    h = c mod N_h
};

// The head of channel c (N_h dividing C).
inline std::size_t channel_head(std::size_t c, std::size_t channels, std::size_t heads, HeadLayout layout) {
  return layout == HeadLayout::contiguous ? c / (channels / heads) : c % heads;
}

}  // namespace attnconv
