#pragma once
// The queries of an H x W image whose outputs a caller needs: the grid
// (first[0] + i step[0], first[1] + j step[1]), i < count[0], j < count[1]
// (a strided convolution's output pixels at their padded coordinates,
// docs/design.md, "Padding, stride, dilation"). Outputs are returned row-major
// over (i, j).
#include <array>
#include <cstddef>

namespace attnconv {

struct QueryGrid {
  std::array<std::size_t, 2> first{0, 0};
  std::array<std::size_t, 2> step{1, 1};
  std::array<std::size_t, 2> count{0, 0};

  // Every query of an H x W image.
  static QueryGrid all(std::size_t height, std::size_t width) { return {{0, 0}, {1, 1}, {height, width}}; }
  std::size_t size() const { return count[0] * count[1]; }
  // The image coordinate of the i-th query along `axis`.
  std::size_t at(int axis, std::size_t i) const { return first[std::size_t(axis)] + i * step[std::size_t(axis)]; }
  // Whether the grid lies within an H x W image.
  bool within(std::size_t height, std::size_t width) const {
    return (count[0] == 0 || at(0, count[0] - 1) < height) && (count[1] == 0 || at(1, count[1] - 1) < width);
  }
};

}  // namespace attnconv
