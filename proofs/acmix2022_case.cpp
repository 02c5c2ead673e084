#include "acmix2022_case.hpp"

#include <algorithm>
#include <map>

#include "acmix/state_dict.hpp"
#include "io/errors.hpp"
#include "proof/npy.hpp"
#include "proof/memory.hpp"

namespace attnconv {

std::vector<Field<AcmixParams>> acmix_case_params(AcmixParamOptions o) {
  using P = AcmixParams;
  const auto config = [](auto member, FieldOptions<int> options) {
    return field(&P::config, member, std::move(options));
  };
  return {
      field(&P::image, {.name = "image", .help = "image size [H, W]", .minimum = 1}),
      config(&AcmixConfig::in_channels, {.name = "in_channels", .help = "C_in", .minimum = 1}),
      config(&AcmixConfig::out_channels, {.name = "out_channels", .help = "C_out (divisible by heads)", .minimum = 1}),
      config(&AcmixConfig::heads, {.name = "heads", .help = "N", .default_value = 4, .minimum = 1}),
      config(&AcmixConfig::kernel_att, {.name = "kernel_att",
                                        .help = "attention window (odd)",
                                        .default_value = o.kernel_att_default,
                                        .minimum = 1}),
      config(&AcmixConfig::kernel_conv,
             {.name = "kernel_conv", .help = o.kernel_conv_help, .default_value = 3, .minimum = 1}),
      config(&AcmixConfig::stride, {.name = "stride", .help = o.stride_help, .default_value = 1, .minimum = 1})};
}

Field<AcmixParams> projection_bias_param() {
  return field(&AcmixParams::init, &AcmixInit::projection_bias,
               {.name = "projection_bias", .help = "conv1..3 biases (false: zero)", .default_value = true});
}

std::vector<std::string> acmix_case_tensor_names() {
  std::vector<std::string> known{"input", "reference_output"};
  for (const auto& entry : acmix_state_dict_entries(AcmixConfig{}, true)) known.push_back(entry.key);
  return known;
}

void check_acmix_case(AcmixParams& p, const Case& c, const Request&) {
  const AcmixConfig& config = p.config;
  const auto& image = p.image;
  p.init.dep_conv_bias = p.init.dep_conv_bias || c.weights.contains("dep_conv.bias");
  if (config.out_channels % config.heads != 0)
    throw ParamError("out_channels", "out_channels " + std::to_string(config.out_channels) +
                                         " is not divisible by heads " + std::to_string(config.heads));
  if (config.kernel_conv % 2 == 0)
    throw ParamError("kernel_conv", "kernel_conv must be odd (padding kernel_conv // 2 keeps ceil(H/s)), got " +
                                        std::to_string(config.kernel_conv));
  if (config.kernel_att % 2 == 0)
    throw ParamError("kernel_att", "kernel_att must be odd (the reference's unfold window is centred), got " +
                                       std::to_string(config.kernel_att));
  if (config.kernel_att / 2 >= std::min(image[0], image[1]))
    throw ParamError("kernel_att", "reflection padding kernel_att // 2 = " + std::to_string(config.kernel_att / 2) +
                                       " must be smaller than the image side " +
                                       std::to_string(std::min(image[0], image[1])));
  if (p.init.dep_init == "loaded" && !c.weights.contains("dep_conv.weight"))
    throw ParamError("dep_init", "\"loaded\" is what the report says when weights hold dep_conv.weight, which this "
                                 "case's do not; choose \"shift\" or \"random\"");
  for (const auto& [key, value] : c.weights.items()) {
    if (!p.init.projection_bias && key.size() > 5 && key.compare(key.size() - 5, 5, ".bias") == 0 &&
        key.compare(0, 4, "conv") == 0 && key != "conv_p.bias")
      throw ParamError("projection_bias", "weights." + key + " is given but \"projection_bias\" is false");
  }
}

std::vector<TensorDump> acmix_state_dict_dumps(std::vector<TensorDump> first) {
  for (const auto& entry : acmix_state_dict_entries(AcmixConfig{}, true))
    first.push_back({entry.key, "the state_dict entry", entry.key == "dep_conv.bias" ? "dep_conv has a bias" : ""});
  return first;
}

double acmix_memory(const Case&, const AcmixParams& p) {
  const AcmixConfig& a = p.config;
  const double s = double(dtype_bytes(p.dtype)), reach = double(std::max(a.kernel_att, a.kernel_conv));
  const double n = (double(p.image[0]) + reach) * (double(p.image[1]) + reach);
  const double c_in = a.in_channels, c_out = a.out_channels, heads = a.heads, d = a.head_dim();
  const double k_att = double(a.kernel_att) * a.kernel_att, k_conv = double(a.kernel_conv) * a.kernel_conv;
  const double per_pixel = 16 * c_out + 2 * c_in + (2 + heads) * k_att + 2 * d * (k_conv + 1);
  const double parameters = 3 * c_out * c_in + 3 * heads * k_conv * 3 * heads + c_out * k_conv * k_conv + 2 * d + 3 * c_out;
  return process_bytes + s * (n * per_pixel + 2 * parameters);
}

TensorShapes acmix_case_tensor_shapes(const AcmixParams& p) {
  TensorShapes out{{"input", {std::size_t(p.config.in_channels), std::size_t(p.image[0]), std::size_t(p.image[1])}}};
  for (const auto& entry : acmix_state_dict_entries(p.config, p.init.dep_conv_bias)) out[entry.key] = entry.shape;
  const auto out_side = [&](int side) { return std::size_t((side + p.config.stride - 1) / p.config.stride); };
  out["reference_output"] = {std::size_t(p.config.out_channels), out_side(p.image[0]), out_side(p.image[1])};
  return out;
}

json acmix_loaded_params(const Case& c, const AcmixParams& p) {
  json out = json::object();
  if (c.weights.contains("dep_conv.weight")) out["dep_init"] = "loaded";
  const auto rate = [&](const char* key, double drawn) {
    if (!c.weights.contains(key)) return drawn;
    return with_dtype(p.dtype, [&](auto tag) { return double(load_case_tensor<decltype(tag)>(c, key, {1})(0)); });
  };
  if (c.weights.contains("rate1") || c.weights.contains("rate2"))
    out["rates"] = {rate("rate1", p.init.rates[0]), rate("rate2", p.init.rates[1])};
  return out;
}

template <class T> AcmixCase<T> acmix_case_tensors(const Case& c, const AcmixParams& p) {
  AcmixCase<T> out;
  out.config = p.config;
  const AcmixInit& init = p.init;
  const Random random(p.seed);
  const auto& image = p.image;
  const std::array<std::size_t, 3> x_shape{std::size_t(out.config.in_channels), std::size_t(image[0]),
                                           std::size_t(image[1])};
  if (has_case_tensor(c, "input")) {
    out.input = load_case_tensor<T>(c, "input", {x_shape.begin(), x_shape.end()});
    out.loaded.push_back("input");
  } else {
    out.input = random.stream(purpose_id("input")).uniform_tensor<T, 3>(x_shape);
  }
  std::map<std::string, xt::xarray<T>> tensors;
  for (auto& [key, tensor] : acmix_state_dict(random_acmix_weights<T>(out.config, init, random)))
    tensors[key] = std::move(tensor);
  for (const auto& entry : acmix_state_dict_entries(out.config, init.dep_conv_bias))
    if (has_case_tensor(c, entry.key)) {
      tensors[entry.key] = load_case_tensor<T>(c, entry.key, entry.shape);
      out.loaded.push_back(entry.key);
    }
  out.weights = acmix_weights_from(out.config, tensors);
  return out;
}

template AcmixCase<float> acmix_case_tensors(const Case&, const AcmixParams&);
template AcmixCase<double> acmix_case_tensors(const Case&, const AcmixParams&);

}  // namespace attnconv
