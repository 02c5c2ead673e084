#pragma once
// Which pixels Swin's window attention expresses as a K x K convolution with
// Cordonnier's quadratic bias and no content terms (docs/local_attention.md,
// "Predicted coverage"). As alpha grows, head h (aimed at the offset Delta_h)
// puts its weight on the keys of the query's window and mask region nearest to
// query + Delta_h, in the window's own (rolled) coordinates - the score is
// -alpha |delta - Delta_h|^2 over those keys (Eq. 9 of Cordonnier et al. read
// as a bias table). The convolution's tap is x[p + Delta_h], zero outside the
// image. A pixel is expressed when every head lands on keys holding its tap's
// value: the tap pixel itself, or, when the tap lies outside the image (the
// convolution's zero padding), only pixels of the bottom/right padding, which
// hold zeros too (issue 24, B8: a head aimed at a masked padded column lands
// on the adjacent padded column).
#include <array>

#include "local/window_attention.hpp"

namespace attnconv {

// pixel (row, column) of the image (H, W) padded to `padded` (multiples of the
// window), window M1 x M2, shift (s1, s2), kernel K odd.
bool swin_pixel_expressed(std::array<int, 2> pixel, std::array<int, 2> image, std::array<int, 2> padded,
                          Extent2 window, Extent2 shift, int kernel);

}  // namespace attnconv
