#pragma once
// The parameters many proofs share, declared once (name, kind, default,
// bounds) and read back typed. A proof adds its own with designated
// initializers: ParamSpec{.name = "alpha", .kind = ParamKind::number, ...}.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "proof/proof.hpp"
#include "ops/conv2d_blocked.hpp"
#include "proof/dtype.hpp"

namespace attnconv {

ParamSpec dtype_param();                                                   // "float32" | "float64", default float64
ParamSpec seed_param(std::string help = "seed of the inputs and weights");  // integer >= 0, default 0
ParamSpec bias_param();                                                    // the convolution's bias, default true
// The convolution geometry (PyTorch's Conv2d arguments). `kind` is int_pair
// for 2D, integer for 1D.
ParamSpec kernel_param(std::string help = "kernel size [K1, K2]", ParamKind kind = ParamKind::int_pair,
                       std::optional<double> maximum = std::nullopt);
ParamSpec padding_param(std::string help = "int, [ph, pw], [top, bottom, left, right], \"same\" or \"valid\"");
ParamSpec padding_mode_param(std::string help = "");
ParamSpec stride_param(ParamKind kind = ParamKind::int_pair, std::string help = "");
ParamSpec dilation_param(ParamKind kind = ParamKind::int_pair, std::optional<double> maximum = std::nullopt);

ParamSpec image_param();  // "image": [H, W], required
// PyTorch's `groups` (ops/geometry.hpp), default 1; it must divide in_channels and out_channels.
ParamSpec groups_param();

// The sizes of a 2D convolution case: "image", "kernel", "in_channels",
// "out_channels" and "groups" (1 for a proof without it).
struct ConvShape {
  std::array<int, 2> image{}, kernel{};
  std::size_t in_channels = 0, out_channels = 0;
  int groups = 1;

  std::array<std::size_t, 3> input() const;   // [C_in, H, W]
  std::array<std::size_t, 4> weight() const;  // [C_out, C_in / groups, K1, K2]
};

// Typed reads of the shared parameters of a loaded case.
Dtype case_dtype(const Case& c);
std::uint64_t case_seed(const Case& c);
// Throws ParamError naming "groups" when it does not divide both channel counts.
ConvShape case_conv_shape(const Case& c);
// The case's "groups" (1 for a proof without it), checked against the channels.
int case_groups(const Case& c, std::size_t in_channels, std::size_t out_channels);

// The 2D geometry of "kernel", "padding", "padding_mode", "stride",
// "dilation" and "groups" (case_conv_shape checks it against the channels);
// "same" padding needs stride 1 (as in PyTorch: ParamError).
ConvGeometry case_geometry(const Case& c);

// [C_out, H_out, W_out]: the shape of the convolution of `shape` with `g`
// (a case's reference_output).
std::vector<std::size_t> conv_output_shape(const ConvShape& shape, const ConvGeometry& g);

}  // namespace attnconv
