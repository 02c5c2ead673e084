#include "ops/padding.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace attnconv {

PaddingMode padding_mode_from_string(const std::string& name) {
  if (name == "zeros") return PaddingMode::zeros;
  if (name == "reflect") return PaddingMode::reflect;
  if (name == "replicate") return PaddingMode::replicate;
  if (name == "circular") return PaddingMode::circular;
  throw std::invalid_argument("unknown padding mode '" + name + "'");
}

std::string to_string(PaddingMode mode) {
  switch (mode) {
    case PaddingMode::zeros: return "zeros";
    case PaddingMode::reflect: return "reflect";
    case PaddingMode::replicate: return "replicate";
    case PaddingMode::circular: return "circular";
  }
  return "?";
}

Padding same_padding(std::array<int, 2> kernel, std::array<int, 2> dilation) {
  const int total_h = dilation[0] * (kernel[0] - 1), total_w = dilation[1] * (kernel[1] - 1);
  return {total_h / 2, total_h - total_h / 2, total_w / 2, total_w - total_w / 2};
}

int source_index(int p, int n, PaddingMode mode) {
  if (p >= 0 && p < n) return p;
  switch (mode) {
    case PaddingMode::zeros: return -1;
    case PaddingMode::replicate: return p < 0 ? 0 : n - 1;
    case PaddingMode::circular: return ((p % n) + n) % n;
    case PaddingMode::reflect:
      // PyTorch requires pad < n, so one reflection suffices.
      return p < 0 ? -p : 2 * (n - 1) - p;
  }
  return -1;
}

template <class T> Image<T> pad(const Image<T>& x, const Padding& padding, PaddingMode mode) {
  const int channels = static_cast<int>(x.shape(0)), height = static_cast<int>(x.shape(1)),
            width = static_cast<int>(x.shape(2));
  // PyTorch rejects these sizes; reflect would otherwise read outside x.
  for (const auto& [side, extent] : {std::pair{padding.top, height}, std::pair{padding.bottom, height},
                                     std::pair{padding.left, width}, std::pair{padding.right, width}}) {
    if (mode == PaddingMode::reflect && side >= extent)
      throw std::invalid_argument("pad: reflect padding " + std::to_string(side) + " must be smaller than the side " +
                                  std::to_string(extent));
    if (mode == PaddingMode::circular && side > extent)
      throw std::invalid_argument("pad: circular padding " + std::to_string(side) + " must not exceed the side " +
                                  std::to_string(extent));
  }
  const int out_h = height + padding.top + padding.bottom, out_w = width + padding.left + padding.right;
  Image<T> out({std::size_t(channels), std::size_t(out_h), std::size_t(out_w)});
  // Each output row: the border columns one by one, the interior [j0, j1) copied
  // whole from its source row (a zero row when the source is padding).
  const int j0 = std::clamp(padding.left, 0, out_w), j1 = std::clamp(padding.left + width, j0, out_w);
  for (int c = 0; c < channels; ++c)
    for (int i = 0; i < out_h; ++i) {
      const int si = source_index(i - padding.top, height, mode);
      T* row = &out(std::size_t(c), std::size_t(i), 0);
      if (si < 0) {
        std::fill(row, row + out_w, T(0));
        continue;
      }
      const T* from = &x(std::size_t(c), std::size_t(si), 0);
      const auto border = [&](int j) {
        const int sj = source_index(j - padding.left, width, mode);
        row[j] = sj < 0 ? T(0) : from[sj];
      };
      for (int j = 0; j < j0; ++j) border(j);
      std::copy(from + (j0 - padding.left), from + (j1 - padding.left), row + j0);
      for (int j = j1; j < out_w; ++j) border(j);
    }
  return out;
}

template Image<float> pad(const Image<float>&, const Padding&, PaddingMode);
template Image<double> pad(const Image<double>&, const Padding&, PaddingMode);

}  // namespace attnconv
