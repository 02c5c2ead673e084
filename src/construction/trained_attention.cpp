#include "construction/trained_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

#include "construction/nearest_convolution.hpp"
#include "construction/theorem1.hpp"
#include "metrics/compare.hpp"

namespace attnconv {

namespace {

std::string shape_words(const std::vector<std::size_t>& shape) {
  std::string s = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + ")";
}

template <class E> std::vector<std::size_t> shape_of(const E& e) { return {e.shape().begin(), e.shape().end()}; }

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument(message);
}

}  // namespace

template <class T> AttentionForward<T> torch_attention_forward(const TorchAttention<T>& layer, const xt::xtensor<T, 3>& x) {
  const std::size_t n_samples = x.shape(0), tokens = x.shape(1), d_in = x.shape(2);
  const std::size_t d3 = layer.w_qkv.shape(0), dim = d3 / 3, heads = layer.heads;
  require(d3 % 3 == 0 && layer.w_qkv.shape(1) == d_in && layer.b_qkv.size() == d3 && heads > 0 && dim % heads == 0 &&
              layer.w_proj.shape(1) == dim && layer.b_proj.size() == layer.w_proj.shape(0),
          "torch_attention_forward: shapes of the layer " + shape_words(shape_of(layer.w_qkv)) + ", " +
              shape_words(shape_of(layer.w_proj)) + " do not fit tokens " + shape_words(shape_of(x)));
  const std::size_t d = dim / heads, d_out = layer.w_proj.shape(0);
  const double scale = 1.0 / std::sqrt(double(d));
  AttentionForward<T> out;
  out.y = xt::xtensor<T, 3>::from_shape({n_samples, tokens, d_out});
  out.p = xt::xtensor<double, 4>::from_shape({n_samples, heads, tokens, tokens});
  std::vector<double> qkv(tokens * d3), o(tokens * dim), row(tokens);
  for (std::size_t n = 0; n < n_samples; ++n) {
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t r = 0; r < d3; ++r) {
        double s = double(layer.b_qkv(r));
        for (std::size_t i = 0; i < d_in; ++i) s += double(layer.w_qkv(r, i)) * double(x(n, t, i));
        qkv[t * d3 + r] = s;
      }
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t q = 0; q < tokens; ++q) {
        double top = -std::numeric_limits<double>::infinity();
        for (std::size_t k = 0; k < tokens; ++k) {
          double s = 0;
          for (std::size_t j = 0; j < d; ++j) s += qkv[q * d3 + h * d + j] * qkv[k * d3 + dim + h * d + j];
          row[k] = s * scale;
          top = std::max(top, row[k]);
        }
        double total = 0;
        for (std::size_t k = 0; k < tokens; ++k) total += row[k] = std::exp(row[k] - top);
        for (std::size_t k = 0; k < tokens; ++k) out.p(n, h, q, k) = row[k] / total;
        for (std::size_t j = 0; j < d; ++j) {
          double s = 0;
          for (std::size_t k = 0; k < tokens; ++k) s += out.p(n, h, q, k) * qkv[k * d3 + 2 * dim + h * d + j];
          o[q * dim + h * d + j] = s;
        }
      }
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t r = 0; r < d_out; ++r) {
        double s = double(layer.b_proj(r));
        for (std::size_t c = 0; c < dim; ++c) s += double(layer.w_proj(r, c)) * o[t * dim + c];
        out.y(n, t, r) = T(s);
      }
  }
  return out;
}

template <class T> xt::xtensor<double, 3> head_maps(const TorchAttention<T>& layer) {
  const std::size_t dim = layer.w_qkv.shape(0) / 3, d_in = layer.w_qkv.shape(1), heads = layer.heads;
  const std::size_t d = dim / heads, d_out = layer.w_proj.shape(0);
  xt::xtensor<double, 3> m = xt::zeros<double>({heads, d_out, d_in});
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t o = 0; o < d_out; ++o)
      for (std::size_t j = 0; j < d; ++j) {
        const double wo = double(layer.w_proj(o, h * d + j));
        for (std::size_t i = 0; i < d_in; ++i) m(h, o, i) += wo * double(layer.w_qkv(2 * dim + h * d + j, i));
      }
  return m;
}

template <class T> Vector<double> folded_bias(const TorchAttention<T>& layer) {
  const std::size_t dim = layer.w_qkv.shape(0) / 3, d_out = layer.w_proj.shape(0);
  Vector<double> b = xt::zeros<double>({d_out});
  for (std::size_t o = 0; o < d_out; ++o) {
    double s = double(layer.b_proj(o));
    for (std::size_t c = 0; c < dim; ++c) s += double(layer.w_proj(o, c)) * double(layer.b_qkv(2 * dim + c));
    b(o) = s;
  }
  return b;
}

ConvolutionalMeasure measure_convolutional(const xt::xtensor<double, 3>& x, const xt::xtensor<double, 3>& y,
                                           const xt::xtensor<double, 4>& p, const xt::xtensor<double, 3>& m,
                                           const Vector<double>& b, const TokenGrid& grid, std::array<int, 2> kernel) {
  const std::size_t n_samples = x.shape(0), tokens = x.shape(1), d_in = x.shape(2);
  const std::size_t heads = m.shape(0), d_out = m.shape(1), g = grid.grid(), e = grid.extra;
  require(tokens == e + g && y.shape(0) == n_samples && y.shape(1) == tokens && y.shape(2) == d_out &&
              p.shape(0) == n_samples && p.shape(1) == heads && p.shape(2) == tokens && p.shape(3) == tokens &&
              m.shape(2) == d_in && b.size() == d_out,
          "measure_convolutional: shapes disagree: x " + shape_words(shape_of(x)) + ", y " + shape_words(shape_of(y)) +
              ", p " + shape_words(shape_of(p)) + ", m " + shape_words(shape_of(m)) + ", grid " + std::to_string(e) +
              " + " + std::to_string(grid.h) + "x" + std::to_string(grid.w));
  require(kernel[0] >= 1 && kernel[1] >= 1 && kernel[0] <= grid.h && kernel[1] <= grid.w,
          "measure_convolutional: the window does not fit the grid");
  const int gh = grid.h, gw = grid.w;
  const int k1 = kernel[0], k2 = kernel[1];
  const OffsetWindow window = kernel_window(kernel);
  const auto c = kernel_center(kernel);
  const int ow = 2 * gw - 1;
  const std::size_t offsets = std::size_t(2 * gh - 1) * std::size_t(ow);
  const auto offset_index = [&](int dr, int dc) { return std::size_t((dr + gh - 1) * ow + (dc + gw - 1)); };

  ConvolutionalMeasure out;
  out.kernel = kernel;
  // The mean attention over the queries with q + δ on the grid, per head and offset.
  xt::xtensor<double, 2> mean_p = xt::zeros<double>({heads, offsets});
  std::vector<double> count(offsets, 0.0);
  out.mass_outside.assign(heads, 0.0);
  out.mass_extra.assign(heads, 0.0);
  out.mean_distance.assign(heads, 0.0);
  out.mean_offset.assign(heads, {0.0, 0.0});
  for (std::size_t n = 0; n < n_samples; ++n)
    for (int qr = 0; qr < gh; ++qr)
      for (int qc = 0; qc < gw; ++qc) {
        const std::size_t q = e + std::size_t(qr * gw + qc);
        for (int kr = 0; kr < gh; ++kr)
          for (int kc = 0; kc < gw; ++kc) count[offset_index(kr - qr, kc - qc)] += 1;
        for (std::size_t h = 0; h < heads; ++h) {
          double on_grid = 0, distance = 0, outside = 0, extra = 0, shift_r = 0, shift_c = 0;
          for (std::size_t k = 0; k < e; ++k) extra += p(n, h, q, k);
          for (int kr = 0; kr < gh; ++kr)
            for (int kc = 0; kc < gw; ++kc) {
              const double a = p(n, h, q, e + std::size_t(kr * gw + kc));
              const int dr = kr - qr, dc = kc - qc;
              mean_p(h, offset_index(dr, dc)) += a;
              on_grid += a;
              distance += a * std::sqrt(double(dr * dr + dc * dc));
              shift_r += a * dr;
              shift_c += a * dc;
              if (!window.contains({dr, dc})) outside += a;
            }
          out.mass_outside[h] += outside;
          out.mass_extra[h] += extra;
          out.mean_distance[h] += distance / on_grid;
          out.mean_offset[h][0] += shift_r / on_grid;
          out.mean_offset[h][1] += shift_c / on_grid;
        }
      }
  const double queries = double(n_samples * g);
  for (std::size_t h = 0; h < heads; ++h) {
    out.mass_outside[h] /= queries;
    out.mass_extra[h] /= queries;
    out.mean_distance[h] /= queries;
    out.mean_offset[h][0] /= queries;
    out.mean_offset[h][1] /= queries;
    // mean_p holds Σ_{n,q} P(q, q + δ) over the queries whose q + δ is on the grid (not yet divided).
    const std::array<int, 2> tap{int(std::lround(out.mean_offset[h][0])), int(std::lround(out.mean_offset[h][1]))};
    out.tap.push_back(tap);
    out.leak.push_back(1.0 - mean_p(h, offset_index(tap[0], tap[1])) / queries);
    out.mass_outside_all += out.mass_outside[h] / double(heads);
    out.mass_extra_all += out.mass_extra[h] / double(heads);
    for (std::size_t k = 0; k < offsets; ++k)
      if (count[k] > 0) mean_p(h, k) /= count[k];
  }

  // The translation-invariance defect, through the Gram matrix of the head maps:
  // ‖Σ_h a_h M_h‖²_F = Σ_{h,h'} a_h a_h' ⟨M_h, M_h'⟩.
  xt::xtensor<double, 2> gram = xt::zeros<double>({heads, heads});
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t h2 = 0; h2 < heads; ++h2) {
      double s = 0;
      for (std::size_t o = 0; o < d_out; ++o)
        for (std::size_t i = 0; i < d_in; ++i) s += m(h, o, i) * m(h2, o, i);
      gram(h, h2) = s;
    }
  double varies = 0, size = 0;
  std::vector<double> a(heads), da(heads);
  for (std::size_t n = 0; n < n_samples; ++n)
    for (int qr = 0; qr < gh; ++qr)
      for (int qc = 0; qc < gw; ++qc)
        for (int kr = 0; kr < gh; ++kr)
          for (int kc = 0; kc < gw; ++kc) {
            const std::size_t q = e + std::size_t(qr * gw + qc), k = e + std::size_t(kr * gw + kc);
            const std::size_t o = offset_index(kr - qr, kc - qc);
            for (std::size_t h = 0; h < heads; ++h) {
              a[h] = p(n, h, q, k);
              da[h] = a[h] - mean_p(h, o);
            }
            for (std::size_t h = 0; h < heads; ++h)
              for (std::size_t h2 = 0; h2 < heads; ++h2) {
                varies += da[h] * da[h2] * gram(h, h2);
                size += a[h] * a[h2] * gram(h, h2);
              }
          }
  out.defect = size > 0 ? std::sqrt(std::max(0.0, varies) / size) : 0.0;

  // (b) white input: the mean kernel on the window.
  out.white_weight = xt::zeros<double>({d_out, d_in, std::size_t(k1), std::size_t(k2)});
  for (int pp = 0; pp < k1; ++pp)
    for (int rr = 0; rr < k2; ++rr) {
      const std::size_t off = offset_index(pp - c[0], rr - c[1]);
      for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t o = 0; o < d_out; ++o)
          for (std::size_t i = 0; i < d_in; ++i)
            out.white_weight(o, i, std::size_t(pp), std::size_t(rr)) += mean_p(h, off) * m(h, o, i);
    }
  out.white_bias = b;

  // (a) least squares: one row per grid query of every sample, columns (i, p, r) then the bias.
  const std::size_t taps = std::size_t(k1 * k2), columns = d_in * taps + 1, rows = n_samples * g;
  out.equations = rows;
  out.unknowns = columns;
  xt::xtensor<double, 2> design = xt::zeros<double>({rows, columns});
  xt::xtensor<double, 2> target = xt::zeros<double>({rows, d_out});
  for (std::size_t n = 0; n < n_samples; ++n)
    for (int qr = 0; qr < gh; ++qr)
      for (int qc = 0; qc < gw; ++qc) {
        const std::size_t row = n * g + std::size_t(qr * gw + qc);
        for (int pp = 0; pp < k1; ++pp)
          for (int rr = 0; rr < k2; ++rr) {
            const int kr = qr + pp - c[0], kc = qc + rr - c[1];
            if (kr < 0 || kr >= gh || kc < 0 || kc >= gw) continue;
            const std::size_t k = e + std::size_t(kr * gw + kc);
            for (std::size_t i = 0; i < d_in; ++i) design(row, (i * std::size_t(k1) + std::size_t(pp)) * std::size_t(k2) + std::size_t(rr)) = x(n, k, i);
          }
        design(row, columns - 1) = 1;
        for (std::size_t o = 0; o < d_out; ++o) target(row, o) = y(n, e + std::size_t(qr * gw + qc), o);
      }
  // LAPACK's gelsd (SVD, minimum norm) on column-major copies. Singular values below
  // eps · max(rows, columns) of the largest count as zero (numpy.linalg.lstsq's rcond=None):
  // LayerNorm'd tokens sum to a constant over channels, so the matrix is rank-deficient
  // and with rcond = eps the round-off directions would be fitted with huge weights.
  xt::xtensor<double, 2, xt::layout_type::column_major> lhs = design;
  xt::xtensor<double, 2, xt::layout_type::column_major> rhs =
      xt::zeros<double>({std::max(rows, columns), d_out});
  xt::view(rhs, xt::range(0, rows), xt::all()) = target;
  xt::xtensor<double, 1, xt::layout_type::column_major> singular = xt::zeros<double>({std::min(rows, columns)});
  xt::blas_index_t solved_rank = 0;
  const double rcond = std::numeric_limits<double>::epsilon() * double(std::max(rows, columns));
  if (xt::lapack::gelsd(lhs, rhs, singular, solved_rank, rcond) != 0)
    throw std::runtime_error("measure_convolutional: LAPACK gelsd did not converge");
  out.rank = std::size_t(solved_rank);
  xt::xtensor<double, 2> solution = xt::view(rhs, xt::range(0, columns), xt::all());  // (columns, D_out)
  out.lstsq_weight = xt::zeros<double>({d_out, d_in, std::size_t(k1), std::size_t(k2)});
  out.lstsq_bias = xt::zeros<double>({d_out});
  xt::xtensor<double, 2> white_flat = xt::zeros<double>({columns, d_out});
  for (std::size_t o = 0; o < d_out; ++o) {
    for (std::size_t i = 0; i < d_in; ++i)
      for (std::size_t pp = 0; pp < std::size_t(k1); ++pp)
        for (std::size_t rr = 0; rr < std::size_t(k2); ++rr) {
          const std::size_t col = (i * std::size_t(k1) + pp) * std::size_t(k2) + rr;
          out.lstsq_weight(o, i, pp, rr) = solution(col, o);
          white_flat(col, o) = out.white_weight(o, i, pp, rr);
        }
    out.lstsq_bias(o) = solution(columns - 1, o);
    white_flat(columns - 1, o) = out.white_bias(o);
  }
  const xt::xtensor<double, 2> y_lstsq = xt::linalg::dot(design, solution);
  const xt::xtensor<double, 2> y_white = xt::linalg::dot(design, white_flat);
  out.y_grid = xt::reshape_view(target, {n_samples, g, d_out});
  out.y_lstsq = xt::reshape_view(y_lstsq, {n_samples, g, d_out});
  out.y_white = xt::reshape_view(y_white, {n_samples, g, d_out});

  // The identity y_q = Σ_h M_h Σ_k P_h(q, k) x_k + b on grid queries.
  xt::xtensor<double, 3> rebuilt = xt::zeros<double>({n_samples, g, d_out});
  std::vector<double> z(d_in);
  for (std::size_t n = 0; n < n_samples; ++n)
    for (std::size_t gq = 0; gq < g; ++gq) {
      const std::size_t q = e + gq;
      for (std::size_t o = 0; o < d_out; ++o) rebuilt(n, gq, o) = b(o);
      for (std::size_t h = 0; h < heads; ++h) {
        std::fill(z.begin(), z.end(), 0.0);
        for (std::size_t k = 0; k < tokens; ++k) {
          const double a2 = p(n, h, q, k);
          for (std::size_t i = 0; i < d_in; ++i) z[i] += a2 * x(n, k, i);
        }
        for (std::size_t o = 0; o < d_out; ++o) {
          double s = 0;
          for (std::size_t i = 0; i < d_in; ++i) s += m(h, o, i) * z[i];
          rebuilt(n, gq, o) += s;
        }
      }
    }
  const Difference identity = compare(rebuilt, out.y_grid);
  out.identity_max_abs = identity.max_abs;
  out.identity_rel_l2 = identity.rel_l2;
  return out;
}

double window_attention(const xt::xtensor<double, 4>& p, const TokenGrid& grid, int k) {
  const std::size_t n_samples = p.shape(0), heads = p.shape(1), e = grid.extra;
  const int gh = grid.h, gw = grid.w, r = (k - 1) / 2;
  double inside = 0;
  for (std::size_t n = 0; n < n_samples; ++n)
    for (std::size_t h = 0; h < heads; ++h)
      for (int qr = 0; qr < gh; ++qr)
        for (int qc = 0; qc < gw; ++qc) {
          const std::size_t q = e + std::size_t(qr * gw + qc);
          for (int kr = std::max(0, qr - r); kr <= std::min(gh - 1, qr + r); ++kr)
            for (int kc = std::max(0, qc - r); kc <= std::min(gw - 1, qc + r); ++kc)
              inside += p(n, h, q, e + std::size_t(kr * gw + kc));
        }
  return inside / double(n_samples * heads * grid.grid());
}

AutoWindow smallest_odd_window(const xt::xtensor<double, 4>& p, const TokenGrid& grid, double mass) {
  require(grid.h >= 1 && grid.w >= 1 && p.shape(2) == grid.extra + grid.grid() && p.shape(3) == p.shape(2),
          "smallest_odd_window: the attention " + shape_words(shape_of(p)) + " does not fit the grid");
  const int largest = std::min(grid.h, grid.w) % 2 == 1 ? std::min(grid.h, grid.w) : std::min(grid.h, grid.w) - 1;
  AutoWindow out;
  for (int k = 1; k <= largest; k += 2) {
    out.kernel = {k, k};
    out.held = window_attention(p, grid, k);
    if (out.held >= mass) {
      out.reached = true;
      break;
    }
  }
  return out;
}

template AttentionForward<float> torch_attention_forward(const TorchAttention<float>&, const xt::xtensor<float, 3>&);
template AttentionForward<double> torch_attention_forward(const TorchAttention<double>&, const xt::xtensor<double, 3>&);
template xt::xtensor<double, 3> head_maps(const TorchAttention<float>&);
template xt::xtensor<double, 3> head_maps(const TorchAttention<double>&);
template Vector<double> folded_bias(const TorchAttention<float>&);
template Vector<double> folded_bias(const TorchAttention<double>&);

}  // namespace attnconv
