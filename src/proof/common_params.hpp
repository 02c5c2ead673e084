#pragma once
// The parameters many proofs share, declared once (proof/field.hpp): dtype,
// seed and the convolution's bias as options of one field, the convolution's
// sizes (ConvShape) and its geometry (ConvGeometry, Conv1dGeometry) as groups
// of fields a proof binds to one member:
//
//   .params = {nested(&P::shape, conv_shape()), nested(&P::geometry, conv_geometry()),
//              field(&P::bias, bias_param()), field(&P::dtype, dtype_param()), field(&P::seed, seed_param())}
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "ops/conv1d_blocked.hpp"
#include "ops/conv2d_blocked.hpp"
#include "proof/dtype.hpp"
#include "proof/field.hpp"
#include "proof/proof.hpp"

namespace attnconv {

FieldOptions<Dtype> dtype_param();                                                    // "float32" | "float64", default float64
FieldOptions<std::uint64_t> seed_param(std::string help = "seed of the inputs and weights");  // >= 0, default 0
FieldOptions<bool> bias_param();                                                     // the convolution's bias, default true
FieldOptions<PaddingMode> padding_mode_param(std::string help = "");                  // PyTorch's padding_mode, default zeros
// A size of the case (channels, heads, ...): a required integer >= 1.
FieldOptions<std::size_t> size_param(std::string name, std::string help, std::optional<double> maximum = std::nullopt);

// The sizes of a 2D convolution case: "image", "kernel", "in_channels",
// "out_channels" and "groups" (1 for a proof without it).
struct ConvShape {
  std::array<int, 2> image{}, kernel{};
  std::size_t in_channels = 0, out_channels = 0;
  int groups = 1;

  std::array<std::size_t, 3> input() const;   // [C_in, H, W]
  std::array<std::size_t, 4> weight() const;  // [C_out, C_in / groups, K1, K2]
};

struct ConvShapeOptions {
  std::string kernel_help = "kernel size [K1, K2]";
  std::optional<double> kernel_maximum = std::nullopt;
  std::string in_help = "C_in", out_help = "C_out";
  bool groups = true;  // declare PyTorch's "groups" (else 1)
};
// "image", "kernel", "in_channels", "out_channels" and "groups"; ParamError
// naming "groups" when it does not divide both channel counts.
Field<ConvShape> conv_shape(ConvShapeOptions options = {});

struct ConvGeometryOptions {
  std::string padding_mode_help = "";
  std::optional<double> dilation_maximum = std::nullopt;
};
// "padding", "padding_mode", "stride" and "dilation" of a 2D convolution with
// the case's "kernel" (and "groups"): "same" padding needs stride 1 (as in
// PyTorch), and the dilated kernel must fit the padded "image" (ParamError).
Field<ConvGeometry> conv_geometry(ConvGeometryOptions options = {});

// The same for a 1D convolution of "kernel" K over "length" L: "groups"
// (checked against "in_channels" and "out_channels"), "padding" an int,
// [left, right], "same" or "valid"; integer "stride" and "dilation".
Field<Conv1dGeometry> conv1d_geometry();

// What a convolution proof reports of its geometry.
namespace metric {
inline const Metric output_shape{.name = "output_shape", .type = MetricType::array, .help = "[C_out, H_out, W_out]"};
inline const Metric padding_resolved{.name = "padding_resolved", .type = MetricType::array,
                                     .help = "[top, bottom, left, right]"};
}  // namespace metric

// What a 2D convolution proof dumps: input (C_in, H, W), conv_weight (C_out,
// C_in / groups, K1, K2), conv_bias (C_out; zeros without bias), expected (the
// statement's reference side: `expected`), actual (the side the claim says
// equals it: `actual`), then `more`.
std::vector<TensorDump> conv_dumps(std::string expected, std::string actual, std::vector<TensorDump> more = {});

// [C_out, H_out, W_out]: the shape of the convolution of `shape` with `g`
// (a case's reference_output).
std::vector<std::size_t> conv_output_shape(const ConvShape& shape, const ConvGeometry& g);

}  // namespace attnconv
