#include "local/window_coverage.hpp"

#include <algorithm>
#include <limits>
#include <vector>

namespace attnconv {
namespace {

int modulo(int n, int size) { return (n % size + size) % size; }

bool outside(std::array<int, 2> pixel, std::array<int, 2> image) {
  return pixel[0] < 0 || pixel[1] < 0 || pixel[0] >= image[0] || pixel[1] >= image[1];
}

}  // namespace

bool swin_pixel_expressed(std::array<int, 2> pixel, std::array<int, 2> image, std::array<int, 2> padded,
                          Extent2 window, Extent2 shift, int kernel) {
  const std::vector<int> regions = swin_regions(padded[0], padded[1], window, shift);
  const auto label = [&](std::array<int, 2> rolled) { return regions[std::size_t(rolled[0] * padded[1] + rolled[1])]; };
  const std::array<int, 2> rolled{modulo(pixel[0] - shift[0], padded[0]), modulo(pixel[1] - shift[1], padded[1])};
  const std::array<int, 2> corner{rolled[0] / window[0] * window[0], rolled[1] / window[1] * window[1]};
  const std::array<int, 2> a{rolled[0] - corner[0], rolled[1] - corner[1]};
  const int r = kernel / 2;
  for (int d1 = -r; d1 <= r; ++d1)
    for (int d2 = -r; d2 <= r; ++d2) {
      const std::array<int, 2> tap{pixel[0] + d1, pixel[1] + d2};
      // The nearest keys to a + Delta among those the mask leaves (squared distances are integers).
      int nearest = std::numeric_limits<int>::max();
      for (int pass = 0; pass < 2; ++pass)
        for (int b1 = 0; b1 < window[0]; ++b1)
          for (int b2 = 0; b2 < window[1]; ++b2) {
            const std::array<int, 2> key_rolled{corner[0] + b1, corner[1] + b2};
            if (label(key_rolled) != label(rolled)) continue;
            const int e1 = b1 - a[0] - d1, e2 = b2 - a[1] - d2, distance = e1 * e1 + e2 * e2;
            if (pass == 0) {
              nearest = std::min(nearest, distance);
              continue;
            }
            if (distance != nearest) continue;
            const std::array<int, 2> key{(key_rolled[0] + shift[0]) % padded[0], (key_rolled[1] + shift[1]) % padded[1]};
            if (key != tap && !(outside(tap, image) && outside(key, image))) return false;
          }
    }
  return true;
}

}  // namespace attnconv
