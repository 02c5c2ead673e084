// The measurement every trained-attention proof shares (trained_common.hpp).
#include "trained_common.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <xtensor/xview.hpp>

#include "construction/nearest_convolution.hpp"
#include "construction/theorem1.hpp"
#include "io/errors.hpp"
#include "proof/memory.hpp"
#include "proof/npy.hpp"
#include "proof/short_number.hpp"

namespace attnconv {

template <class T> xt::xtensor<T, 3> trained_input(const Case& c, std::uint64_t seed, std::size_t tokens, std::size_t dim) {
  if (has_case_tensor(c, "input")) return xt::xtensor<T, 3>(load_case_batch<T>(c, "input", {tokens, dim}));
  return xt::xtensor<T, 3>(
      xt::reshape_view(CaseTensors(c, seed).get<T, 2>("input", {tokens, dim}), {std::size_t(1), tokens, dim}));
}

namespace {
json as_array(const std::vector<double>& v) { return json(v); }

// The window of the nearest convolutions: the given one, or kernel "auto"'s choice.
AutoWindow resolve(const xt::xtensor<double, 4>& p, const TokenGrid& grid, const NearestKernel& given) {
  if (!given.kernel.size) return smallest_odd_window(p, grid, given.mass);
  return {.kernel = *given.kernel.size, .held = 0, .reached = true};
}

json offsets(const std::vector<std::array<int, 2>>& v) {
  json out = json::array();
  for (const auto& a : v) out.push_back({a[0], a[1]});
  return out;
}
json offsets(const std::vector<std::array<double, 2>>& v) {
  json out = json::array();
  for (const auto& a : v) out.push_back({a[0], a[1]});
  return out;
}
}  // namespace

template <class T>
Outcome trained_outcome(const Case& c, Dtype dtype, const xt::xtensor<T, 3>& x, const TrainedLayer<T>& layer,
                        const TokenGrid& grid, const NearestKernel& given) {
  const AttentionForward<T>& forward = layer.forward;
  const xt::xtensor<double, 3> xd = xt::cast<double>(x), yd = xt::cast<double>(forward.y);
  AutoWindow window = resolve(forward.p, grid, given);
  const std::array<int, 2> kernel = window.kernel;
  const ConvolutionalMeasure m = measure_convolutional(xd, yd, forward.p, layer.head_maps, layer.bias, grid, kernel);
  window.held = 1.0 - m.mass_outside_all - m.mass_extra_all;  // the attention on grid keys inside the window

  Outcome out;
  const Difference white = compare(m.y_white, m.y_grid);  // relative to the layer's output
  set_distance(out, white);
  const Difference lstsq = compare(m.y_lstsq, m.y_grid);
  out.set(metric::lstsq_max_abs, lstsq.max_abs);
  out.set(metric::lstsq_rel_l2, lstsq.rel_l2);
  out.set(metric::identity_max_abs, m.identity_max_abs);
  out.set(metric::identity_rel_l2, m.identity_rel_l2);
  out.set(metric::translation_defect, m.defect);
  out.set(metric::mass_outside, m.mass_outside_all);
  out.set(metric::mass_extra, m.mass_extra_all);
  out.set(metric::head_mass_outside, as_array(m.mass_outside));
  out.set(metric::head_mass_extra, as_array(m.mass_extra));
  out.set(metric::mean_attention_distance, as_array(m.mean_distance));
  out.set(metric::mean_offset, offsets(m.mean_offset));
  out.set(metric::tap, offsets(m.tap));
  out.set(metric::leak, as_array(m.leak));
  out.set(metric::kernel_resolved, json::array({kernel[0], kernel[1]}));
  out.set(metric::kernel_mass_held, window.held);
  out.set(metric::equations, m.equations);
  out.set(metric::unknowns, m.unknowns);
  out.set(metric::rank, m.rank);
  const bool under = m.equations < m.unknowns || m.rank < m.unknowns;
  out.set(metric::underdetermined, under);
  out.set(metric::samples, x.shape(0));
  // The claim judged by default: the kernels are read from an identity that holds to round-off.
  // (The module's own output is compared by the runner: reference_rel_l2.)
  out.default_tolerance = {{metric::identity_rel_l2.name, dtype == Dtype::float32 ? 1e-4 : 1e-10}};

  std::ostringstream msg;
  const std::string k = std::to_string(kernel[0]) + "x" + std::to_string(kernel[1]);
  msg << "measured on " << x.shape(0) << (x.shape(0) == 1 ? " sample" : " samples") << " of " << grid.h << "x"
      << grid.w << " grid tokens (+" << grid.extra << " extra): the " << layer.family << " is " << short_number(lstsq.rel_l2)
      << " (rel_l2) from its least-squares " << k << " convolution on this input, " << short_number(white.rel_l2)
      << " from its white-input one; translation-invariance defect " << short_number(m.defect) << "; attention outside the window "
      << short_number(m.mass_outside_all) << ", on extra tokens " << short_number(m.mass_extra_all)
      << "; mean attention distance per head [";
  for (std::size_t h = 0; h < m.mean_distance.size(); ++h) msg << (h ? ", " : "") << short_number(m.mean_distance[h]);
  msg << "] grid steps; tap [delta1, delta2] (leak) per head";
  for (std::size_t h = 0; h < m.tap.size(); ++h)
    msg << (h ? ", " : " ") << "[" << m.tap[h][0] << ", " << m.tap[h][1] << "] (" << short_number(m.leak[h]) << ")";
  if (!given.kernel.size) {
    msg << "; kernel \"auto\": " << k;
    if (window.reached)
      msg << ", the smallest odd square window holding kernel_mass " << short_number(given.mass)
          << " of the attention (kernel_mass_held " << short_number(window.held) << ")";
    else
      msg << ", the largest odd square window that fits; it holds only " << short_number(window.held)
          << " of the attention, short of kernel_mass " << short_number(given.mass);
  }
  msg << ". These distances are findings, not pass/fail, unless the case sets a tolerance on them";
  if (under)
    msg << ". The least squares is underdetermined (" << m.equations << " equations, " << m.unknowns
        << " unknowns per output channel, rank " << m.rank << "): its convolution is the minimum-norm one of many";
  out.message = msg.str();

  const auto grid_tokens = [&](const xt::xtensor<double, 3>& a) { return xt::xarray<T>(xt::cast<T>(a)); };
  // Input and output as the file gives them: (N, T, D) for a batch, (T, D) without one.
  const auto as_given = [&](const xt::xtensor<T, 3>& a) {
    return c.batch > 0 ? xt::xarray<T>(a) : xt::xarray<T>(xt::view(a, 0));
  };
  out.tensors = {{"input", as_given(x)},
                 {"actual", as_given(forward.y)},
                 {"lstsq_conv_weight", xt::xarray<T>(xt::cast<T>(m.lstsq_weight))},
                 {"lstsq_conv_bias", xt::xarray<T>(xt::cast<T>(m.lstsq_bias))},
                 {"conv_weight", xt::xarray<T>(xt::cast<T>(m.white_weight))},
                 {"conv_bias", xt::xarray<T>(xt::cast<T>(m.white_bias))},
                 {"lstsq_expected", grid_tokens(m.y_lstsq)},
                 {"expected", grid_tokens(m.y_white)},
                 {"attention", xt::xarray<T>(xt::cast<T>(forward.p))},
                 {"head_maps", xt::xarray<T>(xt::cast<T>(layer.head_maps))},
                 {"folded_bias", xt::xarray<T>(xt::cast<T>(layer.bias))}};
  out.reference_tensor = "actual";
  return out;
}
template <class T>
std::vector<FigureData> trained_figures(const Case& c, const xt::xtensor<T, 3>& x, const TrainedLayer<T>& layer,
                                        const TokenGrid& grid, const NearestKernel& given) {
  const AttentionForward<T>& forward = layer.forward;
  const std::array<int, 2> kernel = resolve(forward.p, grid, given).kernel;
  const ConvolutionalMeasure m = measure_convolutional(xt::cast<double>(x), xt::cast<double>(forward.y), forward.p,
                                                       layer.head_maps, layer.bias, grid, kernel);
  const std::size_t heads = forward.p.shape(1), gh = std::size_t(grid.h), gw = std::size_t(grid.w);
  const int qr = (grid.h - 1) / 2, qc = (grid.w - 1) / 2;
  const std::size_t q = grid.extra + std::size_t(qr) * gw + std::size_t(qc);
  const auto words = [](std::array<int, 2> a) {
    return "[" + std::to_string(a[0]) + ", " + std::to_string(a[1]) + "]";
  };

  // Each head's attention over the grid keys for the centre query of the first sample.
  HeatMapGrid attention;
  const int columns = int(std::ceil(std::sqrt(double(heads))));
  attention.layout = {int((heads + std::size_t(columns) - 1) / std::size_t(columns)), columns};
  double top = 1e-300;
  for (std::size_t h = 0; h < heads; ++h) {
    xt::xtensor<double, 2> values = xt::zeros<double>({gh, gw});
    for (std::size_t r = 0; r < gh; ++r)
      for (std::size_t k = 0; k < gw; ++k)
        top = std::max(top, values(r, k) = forward.p(0, h, q, grid.extra + r * gw + k));
    attention.panels.push_back({.title = "head " + std::to_string(h) + ": " + words(m.tap[h]) + ", leak " +
                                         short_number(m.leak[h]),
                                .values = std::move(values)});
  }
  attention.range = {0, top};
  attention.marker = std::array<int, 2>{qr, qc};
  attention.window = std::array<int, 4>{0, grid.h - 1, 0, grid.w - 1};  // row 0 on top

  // |K(delta)|_F per tap of the two nearest convolutions.
  HeatMapGrid kernels;
  kernels.layout = {1, 2};
  double largest = 1e-300;
  for (const auto& [title, w] :
       {std::pair{"least squares on this input", &m.lstsq_weight}, std::pair{"white input", &m.white_weight}}) {
    xt::xtensor<double, 2> norms = xt::zeros<double>({std::size_t(kernel[0]), std::size_t(kernel[1])});
    for (std::size_t a = 0; a < norms.shape(0); ++a)
      for (std::size_t b = 0; b < norms.shape(1); ++b) {
        double s = 0;
        for (std::size_t o = 0; o < w->shape(0); ++o)
          for (std::size_t i = 0; i < w->shape(1); ++i) s += (*w)(o, i, a, b) * (*w)(o, i, a, b);
        largest = std::max(largest, norms(a, b) = std::sqrt(s));
      }
    kernels.panels.push_back({.title = title, .values = std::move(norms)});
  }
  kernels.range = {0, largest};
  const auto centre = kernel_center(kernel);
  kernels.marker = std::array<int, 2>{centre[0], centre[1]};
  kernels.window = std::array<int, 4>{0, kernel[0] - 1, 0, kernel[1] - 1};

  const std::string k = std::to_string(kernel[0]) + "x" + std::to_string(kernel[1]);
  return {{.name = "attention-" + c.name,
           .title = c.name + "\nattention of the centre query (" + std::to_string(qr) + ", " + std::to_string(qc) +
                    ") (red box); head: tap [d1, d2], leak",
           .content = std::move(attention)},
          {.name = "kernels-" + c.name,
           .title = c.name + "\n|K(delta)|_F per tap of the nearest " + k + " convolutions (red box: delta = 0)",
           .content = std::move(kernels)}};
}

FieldOptions<AutoPair> nearest_kernel_param() {
  return {.name = "kernel",
          .help = "the window [K1, K2] of the nearest convolutions, or \"auto\": the smallest odd K x K window "
                  "holding at least kernel_mass of the attention on grid keys (averaged over grid queries, samples "
                  "and heads; the largest odd one that fits when none does)",
          .default_value = AutoPair{std::array<int, 2>{3, 3}},
          .minimum = 1,
          .maximum = 4096};
}

FieldOptions<double> kernel_mass_param() {
  return {.name = "kernel_mass",
          .help = "for kernel \"auto\": the least attention (averaged over grid queries, samples and heads) its "
                  "window holds; unused with a given kernel",
          .default_value = 0.9,
          .minimum = 0,
          .exclusive_minimum = true,
          .maximum = 1};
}

void check_nearest_kernel(const NearestKernel& k, std::array<int, 2> grid) {
  if (!k.kernel.size) return;
  const auto [k1, k2] = *k.kernel.size;
  if (k1 > grid[0] || k2 > grid[1])
    throw ParamError("kernel", "the " + std::to_string(k1) + "x" + std::to_string(k2) + " window must fit the " +
                                   std::to_string(grid[0]) + "x" + std::to_string(grid[1]) + " grid");
}

std::array<int, 2> largest_kernel(const NearestKernel& k, std::array<int, 2> grid) {
  if (k.kernel.size) return *k.kernel.size;
  const int m = std::max(1, std::min(grid[0], grid[1]));
  return {m % 2 ? m : m - 1, m % 2 ? m : m - 1};
}

std::vector<Metric> trained_metrics(std::vector<Metric> more) {
  std::vector<Metric> all{metric::lstsq_max_abs,      metric::lstsq_rel_l2,      metric::identity_max_abs,
                          metric::identity_rel_l2,    metric::translation_defect, metric::mass_outside,
                          metric::mass_extra,         metric::head_mass_outside, metric::head_mass_extra,
                          metric::mean_attention_distance, metric::mean_offset, metric::tap, metric::leak,
                          metric::kernel_resolved, metric::kernel_mass_held, metric::equations,   metric::unknowns,
                          metric::rank,               metric::underdetermined,   metric::samples};
  all.insert(all.end(), more.begin(), more.end());
  return distance_metrics(
      "the layer's output on grid tokens against its white-input K1 x K2 convolution's, over the batch (a finding)",
      std::move(all));
}

std::vector<TensorDump> trained_dumps() {
  return {
      {"input", "(N, T, D), or (T, D) for an input without a batch: the tokens"},
              {"actual", "(N, T, D) or (T, D): the layer's output (the proof's, compared with reference_output)"},
              {"lstsq_conv_weight", "(D_out, D_in, K1, K2): the least-squares convolution on this input, loadable "
                                    "into torch.nn.Conv2d(padding='same')"},
              {"lstsq_conv_bias", "(D_out)"},
              {"conv_weight", "(D_out, D_in, K1, K2): the white-input convolution, loadable into "
                              "torch.nn.Conv2d(padding='same')"},
              {"conv_bias", "(D_out): W_out b_val + b_out"},
              {"lstsq_expected", "(N, H*W, D_out): the least-squares convolution's output on the grid tokens"},
              {"expected", "(N, H*W, D_out): the white-input convolution's output on the grid tokens"},
              {"attention", "(N, N_h, T, T): the layer's attention probabilities"},
              {"head_maps", "(N_h, D_out, D_in): M_h = W_o^h W_v^h, so that actual = sum_h attention_h x M_h^T + "
                            "folded_bias on every token"},
              {"folded_bias", "(D_out): b = W_o b_v + b_o"}};
}

double trained_memory(const Case& c, double t, double d, double heads, double g, std::array<int, 2> kernel) {
  const double columns = d * kernel[0] * kernel[1] + 1, samples = double(std::max<std::size_t>(1, c.batch));
  // Per sample: its tokens (input, values, output, the reference's: 4 T D), its attention (N_h T^2),
  // its rows of the least-squares matrix twice (2 G columns) and its grid outputs (4 G D); once: the
  // weights and kernels (3 D^2).
  return process_bytes + 8 * (samples * (4 * t * d + heads * t * t + 2 * g * columns + 4 * g * d) + 3 * d * d);
}

template std::vector<FigureData> trained_figures(const Case&, const xt::xtensor<float, 3>&, const TrainedLayer<float>&,
                                                 const TokenGrid&, const NearestKernel&);
template std::vector<FigureData> trained_figures(const Case&, const xt::xtensor<double, 3>&,
                                                 const TrainedLayer<double>&, const TokenGrid&, const NearestKernel&);
template xt::xtensor<float, 3> trained_input<float>(const Case&, std::uint64_t, std::size_t, std::size_t);
template xt::xtensor<double, 3> trained_input<double>(const Case&, std::uint64_t, std::size_t, std::size_t);
template Outcome trained_outcome<float>(const Case&, Dtype, const xt::xtensor<float, 3>&, const TrainedLayer<float>&,
                                        const TokenGrid&, const NearestKernel&);
template Outcome trained_outcome<double>(const Case&, Dtype, const xt::xtensor<double, 3>&,
                                         const TrainedLayer<double>&, const TokenGrid&, const NearestKernel&);

}  // namespace attnconv
