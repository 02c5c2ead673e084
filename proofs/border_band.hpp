#pragma once
// Where two per-pixel outputs agree and where they do not: the interior, the
// bounding box of the pixels within an agreement threshold, and the border
// band outside it (cordonnier2020.padding_remark and the local-attention
// proofs; docs/design.md, "Local attention", "Border band measurement").
#include <array>
#include <optional>
#include <xtensor/xtensor.hpp>

#include "proof/metric.hpp"
#include "tensor/tensor.hpp"

namespace attnconv {

// What a border-band measurement reports (measure_band); each proof may
// describe them in its own words.
namespace metric {
inline const Metric interior_max_abs{.name = "interior_max_abs", .help = "max_abs inside the measured band: round-off",
                                     .error = true};
inline const Metric band_sides{.name = "band_sides", .type = MetricType::array,
                               .help = "measured band per side [top, bottom, left, right]; null when no pixel agrees",
                               .nullable = true};
inline const Metric band_sides_expected{.name = "band_sides_expected", .type = MetricType::array,
                                        .help = "the predicted band per side"};
inline const Metric band_error{.name = "band_error", .type = MetricType::integer,
                               .help = "sum over sides of |measured - expected| plus band_exceptions", .error = true};
inline const Metric band_exceptions{.name = "band_exceptions", .type = MetricType::integer,
                                    .help = "pixels inside the measured box that differ or outside it that agree",
                                    .error = true};
inline const Metric band_max_abs{.name = "band_max_abs", .help = "the largest difference in the band"};
}  // namespace metric

// Per pixel, the largest |a - b| over the channels of two (C, H, W) images; NaN
// where either is NaN (a NaN never agrees).
template <class T> xt::xtensor<double, 2> pixel_difference(const Image<T>& a, const Image<T>& b);

// The border band of a difference map: the bounding box of the pixels whose
// difference is at most `threshold` (they agree), and everything outside it.
struct BorderBand {
  std::optional<std::array<int, 4>> sides;  // [top, bottom, left, right]; none when no pixel agrees
  int exceptions = 0;       // pixels inside the box that differ or outside it that agree
  double interior_max = 0;  // the largest difference inside the box
  double band_max = 0;      // the largest difference outside it (the error in the band)
  // sum over sides of |measured - expected| plus the exceptions (0: the band is as predicted)
  int error(const std::array<int, 4>& expected) const;
  json sides_json() const;
};
BorderBand measure_band(const xt::xtensor<double, 2>& difference, double threshold);

}  // namespace attnconv
