// Pan et al., "On the Integration of Self-Attention and Convolution", CVPR 2022,
// Sec. 3.4 and Table 1: parameters and multiply-adds of Stage I and Stage II
// for a convolution, a (window) self-attention layer and ACmix. The counts are
// read from OpCounter, which the Stage I / Stage II functions increment as they
// run; the paper's formulas stand beside them:
//   convolution:    Stage I k^2 C_in C_out H W,  Stage II k^2 C_out H' W'  (shift and sum)
//   self-attention: Stage I 3 C_in C_out H W,    Stage II 2 k_att^2 C_out H' W'
//   parameters:     k^2 C_in C_out and 3 C_in C_out in Stage I, none in Stage II
// (H' W' = the output size, ceil(H/s) ceil(W/s)). The paper's claim: Stage I
// dominates, quadratically in channels against linearly for Stage II.
#include <cmath>

#include "acmix/conv_decomposition.hpp"
#include "acmix2022_case.hpp"
#include "io/errors.hpp"
#include "metrics/compare.hpp"
#include "proof/common_params.hpp"
#include "proof/proof_spec.hpp"
#include "tensor/random.hpp"

namespace attnconv {
namespace metric {
namespace {
const Metric table{
    .name = "table", .type = MetricType::object, .help = "per method and stage: measured and paper counts"};
const Metric stage1_share{.name = "stage1_share",
                          .type = MetricType::object,
                          .help = "per method: Stage I / (Stage I + Stage II) multiply-adds"};
const Metric stage1_dominates_from_in_channels{
    .name = "stage1_dominates_from_in_channels",
    .type = MetricType::object,
    .help = "per method: the least C_in from which Stage I exceeds Stage II"};
const Metric conv_decomposition_max_abs{.name = "conv_decomposition_max_abs",
                                        .help = "max |decomposed - plain-loop convolution| of the counted convolution",
                                        .error = true};
}  // namespace
}  // namespace metric

namespace {

std::string percent(double share) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", 100 * share);
  return buffer;
}

json row(std::int64_t measured, std::int64_t paper) { return {{"measured", measured}, {"paper", paper}}; }

// Smallest C_in from which Stage I (linear in C_in) exceeds Stage II (independent of C_in).
std::int64_t crossover_in_channels(std::int64_t stage1, std::int64_t stage2, std::int64_t c_in) {
  const double per_channel = double(stage1) / double(c_in);
  return std::int64_t(std::floor(double(stage2) / per_channel)) + 1;
}

template <class T> Outcome verify(const Case& c, const AcmixParams& p) {
  const AcmixCase<T> ac = acmix_case_tensors<T>(c, p);
  const AcmixConfig& cfg = ac.config;
  const std::int64_t c_in = cfg.in_channels, c_out = cfg.out_channels, heads = cfg.heads;
  const std::int64_t k = cfg.kernel_conv, ka = cfg.kernel_att;
  const std::int64_t hw = std::int64_t(ac.input.shape(1)) * std::int64_t(ac.input.shape(2));
  const std::int64_t hw_out = std::int64_t(cfg.output_size(int(ac.input.shape(1)))) * cfg.output_size(int(ac.input.shape(2)));

  // Convolution k x k, padding k // 2, stride s, run as its decomposition.
  const Random random(p.seed);
  const Kernel<T> conv_weight = random.stream(purpose_id("conv_weight"))
                                    .uniform_tensor<T, 4>({std::size_t(c_out), std::size_t(c_in), std::size_t(k), std::size_t(k)});
  ConvGeometry geometry;
  geometry.padding = {int(k / 2), int(k / 2), int(k / 2), int(k / 2)};
  geometry.stride = {cfg.stride, cfg.stride};
  OpCounter conv_count;
  const Image<T> conv_out =
      conv2d_decomposed(ac.input, conv_weight, std::optional<Vector<T>>{}, geometry, ShiftMethod::tensor_shift, conv_count);
  const double conv_check = compare(conv_out, conv2d_blocked(ac.input, conv_weight, std::optional<Vector<T>>{}, geometry)).max_abs;

  // Self-attention: the ACmix attention path alone (Stage I + window attention).
  OpCounter sa_count;
  const AcmixStage1<T> s1 = acmix_stage1(ac.weights, ac.input, sa_count);
  acmix_attention_path(cfg, ac.weights, s1, sa_count);
  const std::int64_t sa_stage2 = sa_count.total("stage2.attention.scores") + sa_count.total("stage2.attention.aggregation");

  // ACmix: the whole module.
  OpCounter acmix_count;
  acmix_forward(cfg, ac.weights, ac.input, acmix_count);

  const std::int64_t conv_params = std::int64_t(conv_weight.size());
  const std::int64_t projection_params =
      std::int64_t(ac.weights.conv1_weight.size() + ac.weights.conv2_weight.size() + ac.weights.conv3_weight.size());
  const std::int64_t fc_params_code = std::int64_t(ac.weights.fc_weight.size());
  const std::int64_t dep_conv_params = std::int64_t(ac.weights.dep_conv_weight.size());
  const std::int64_t fc_params_paper = 3 * heads * k * k * heads;

  json table = {
      {"convolution",
       {{"stage1_multiply_adds", row(conv_count.total("stage1"), k * k * c_in * c_out * hw)},
        {"stage2_multiply_adds", row(conv_count.total("stage2"), k * k * c_out * hw_out)},
        {"stage1_params", row(conv_params, k * k * c_in * c_out)},
        {"stage2_params", row(0, 0)}}},
      {"self_attention",
       {{"stage1_multiply_adds", row(sa_count.total("stage1"), 3 * c_in * c_out * hw)},
        {"stage2_multiply_adds", row(sa_stage2, 2 * ka * ka * c_out * hw_out)},
        {"stage1_params", row(projection_params, 3 * c_in * c_out)},
        {"stage2_params", row(0, 0)}}},
      {"acmix",
       {{"stage1_multiply_adds", row(acmix_count.total("stage1"), 3 * c_in * c_out * hw)},
        {"stage1_params", row(projection_params, 3 * c_in * c_out)},
        {"stage2_multiply_adds", {{"measured", acmix_count.total("stage2")}}},
        {"multiply_adds_by_label", acmix_count.multiply_adds},
        {"fc_params", {{"measured", fc_params_code}, {"paper", fc_params_paper}, {"code_formula", 3 * heads * k * k}}},
        {"fc_multiply_adds", {{"measured", acmix_count.total("stage2.conv.fc")}, {"code_formula", 3 * k * k * c_out * hw}}},
        {"shift_multiply_adds",
         {{"measured_dep_conv", acmix_count.total("stage2.conv.dep_conv")},
          {"paper_shift_sum", k * k * c_out * hw_out},
          {"code_formula", k * k * k * k * c_out * hw_out}}},
        {"dep_conv_params", dep_conv_params},
        {"position_encoding_multiply_adds", acmix_count.total("stage2.attention.position")}}}};

  // The exact rows: every measured count of convolution and self-attention, and
  // ACmix's Stage I, against the paper's formula.
  double max_abs = 0, diff2 = 0, norm2 = 0;
  const auto check = [&](const json& r) {
    const double difference = double(r["measured"].get<std::int64_t>() - r["paper"].get<std::int64_t>());
    max_abs = std::max(max_abs, std::abs(difference)), diff2 += difference * difference;
    norm2 += std::pow(double(r["paper"].get<std::int64_t>()), 2);
  };
  for (const char* method : {"convolution", "self_attention"})
    for (const auto& [key, r] : table[method].items()) check(r);
  check(table["acmix"]["stage1_multiply_adds"]);
  check(table["acmix"]["stage1_params"]);

  const auto share = [](std::int64_t s1_, std::int64_t s2_) { return double(s1_) / double(s1_ + s2_); };
  const std::int64_t conv1 = conv_count.total("stage1"), conv2 = conv_count.total("stage2");
  const std::int64_t sa1 = sa_count.total("stage1"), ac1 = acmix_count.total("stage1"), ac2 = acmix_count.total("stage2");
  Outcome out;
  out.set(metric::max_abs, max_abs);
  out.set(metric::rel_l2, norm2 > 0 ? std::sqrt(diff2 / norm2) : std::sqrt(diff2));
  out.set(metric::table, table);
  out.set(metric::stage1_share, {{"convolution", share(conv1, conv2)}, {"self_attention", share(sa1, sa_stage2)},
                                   {"acmix", share(ac1, ac2)}});
  out.set(metric::stage1_dominates_from_in_channels, {{"convolution", crossover_in_channels(conv1, conv2, c_in)},
                   {"self_attention", crossover_in_channels(sa1, sa_stage2, c_in)},
                   {"acmix", crossover_in_channels(ac1, ac2, c_in)}});
  out.set(metric::conv_decomposition_max_abs, conv_check);
  out.default_tolerance = tolerance({{metric::max_abs, 0.0}});
  out.message = "Stage I share: convolution " + percent(share(conv1, conv2)) + ", self-attention " +
                percent(share(sa1, sa_stage2)) + ", ACmix " + percent(share(ac1, ac2)) +
                "; Stage I exceeds Stage II from C_in = " +
                std::to_string(crossover_in_channels(sa1, sa_stage2, c_in)) + " (self-attention) and " +
                std::to_string(crossover_in_channels(ac1, ac2, c_in)) +
                " (ACmix as the code runs it); the paper gives the fully connected layer as 3N x k^2N (" +
                std::to_string(fc_params_paper) + " parameters), the reference code uses 3N x k^2 (fc.weight (" +
                std::to_string(k * k) + ", " + std::to_string(3 * heads) + ", 1, 1): " + std::to_string(fc_params_code) +
                " parameters, shared over the " + std::to_string(cfg.head_dim()) +
                " head_dim channels); the code's shift is a dense grouped convolution (dep_conv, " +
                std::to_string(dep_conv_params) + " parameters): " +
                std::to_string(acmix_count.total("stage2.conv.dep_conv")) + " multiply-adds against the paper's " +
                std::to_string(k * k * c_out * hw_out) + " shift-and-sum additions";
  std::string not_dominant;
  for (const auto& [method, value] : out.get(metric::stage1_share).items())
    if (value.template get<double>() <= 0.5) not_dominant += (not_dominant.empty() ? "" : ", ") + method;
  if (!not_dominant.empty())
    out.message += "; at these sizes Stage I does NOT dominate for: " + not_dominant;
  out.tensors = {{"input", xt::xarray<T>(ac.input)}, {"conv_weight", xt::xarray<T>(conv_weight)}};
  return out;
}

// The measured count of one stage of one method of the `table` metric.
double measured(const std::string& method, const json& entry, const char* stage) {
  if (!entry.is_object() || !entry.contains(stage) || !entry[stage].is_object() ||
      !entry[stage].contains("measured") || !entry[stage]["measured"].is_number())
    throw std::runtime_error("its 'table' metric has no measured " + std::string(stage) + " for '" + method + "'");
  return entry[stage]["measured"].get<double>();
}

// Table 1 as stacked bars: the Stage I and Stage II multiply-adds of each
// method, as this case reported them.
std::vector<FigureData> figures(const Case& c, const AcmixParams&, const json& metrics) {
  const std::string& name = metric::table.name;
  if (!metrics.contains(name) || !metrics[name].is_object()) throw std::runtime_error("no 'table' metric in the report");
  const json& table = metrics[name];
  if (table.empty()) throw std::runtime_error("its 'table' metric lists no method");
  StackedBars bars{.categories = {},
                   .series = {"Stage I (1x1 projections)", "Stage II (aggregation)"},
                   .values = xt::zeros<double>({table.size(), std::size_t(2)}),
                   .y_label = "multiply-adds"};
  for (const auto& [method, entry] : table.items()) {
    const std::size_t i = bars.categories.size();
    bars.values(i, 0) = measured(method, entry, "stage1_multiply_adds");
    bars.values(i, 1) = measured(method, entry, "stage2_multiply_adds");
    bars.categories.push_back(method);
  }
  return {{.name = "cost-" + c.name,
           .title = c.name + ": multiply-adds by stage (ACmix, Pan et al. CVPR 2022)",
           .content = std::move(bars)}};
}

void check(AcmixParams& p, const Case& c, const Request& request) {
  if (!c.weights.empty())
    throw InputError(c.file + ": case '" + c.name + "': key 'weights': acmix2022.cost_table counts operations and "
                     "draws its tensors from the seed; it loads no weights");
  check_acmix_case(p, c, request);
}

const bool registered = register_proof(make_proof<AcmixParams>({
    .id = "acmix2022.cost_table",
    .paper = "Pan et al., On the Integration of Self-Attention and Convolution, CVPR 2022, Sec. 3.4, Table 1",
    .statement =
        "Parameters and multiply-adds of Stage I and Stage II for a convolution, a self-attention layer and ACmix, "
        "counted from the operations run, beside the paper's formulas; Stage I dominates (quadratic in channels).",
    .params = fields<AcmixParams>(
        acmix_case_params({.kernel_att_default = 3,
                           .kernel_conv_help = "k of the convolution and of ACmix's convolution path (odd)"}),
        field(&AcmixParams::dtype, dtype_param()), field(&AcmixParams::seed, seed_param(""))),
    .check = check,
    .verify = {verify<float>, verify<double>},
    .metrics = distance_metrics("the counted table entries against the paper's formulas",
                                {metric::table, metric::stage1_share, metric::stage1_dominates_from_in_channels,
                                 metric::conv_decomposition_max_abs}),
    .dumps = {{"input", "(C_in, H, W)"}, {"conv_weight", "the k x k convolution whose decomposition is counted"}},
    .memory_estimate = acmix_memory,
    .expected_tensors = acmix_case_tensor_shapes,
    .figures = figures,
    .figures_per_case = true,
}));

}  // namespace
}  // namespace attnconv
