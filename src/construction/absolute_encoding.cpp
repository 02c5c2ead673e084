#include "construction/absolute_encoding.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

#include "mhsa/blas.hpp"

namespace attnconv {

namespace {
constexpr std::size_t position_dim = 4;  // (p1, p2, |p|^2, 1)
constexpr std::size_t key_dim = 3;       // the rank of M
constexpr std::array<std::size_t, key_dim> nonzero_rows{0, 1, 3};  // of M
}  // namespace

std::array<std::array<double, 4>, 4> absolute_block(double alpha, std::array<int, 2> target) {
  std::array<std::array<double, 4>, 4> m{};
  m[0][0] = m[1][1] = 2 * alpha;
  m[3][0] = 2 * alpha * target[0];
  m[3][1] = 2 * alpha * target[1];
  m[3][2] = -alpha;
  return m;
}

template <class T>
Matrix<T> with_positions(const Matrix<T>& tokens, std::size_t height, std::size_t width, PositionChannels where) {
  if (tokens.shape(0) != height * width) throw std::invalid_argument("with_positions: tokens are not H*W rows");
  const std::size_t d_in = tokens.shape(1);
  if (where == PositionChannels::added && d_in < position_dim)
    throw std::invalid_argument("with_positions: adding positions needs at least 4 image channels");
  const std::size_t first = where == PositionChannels::reserved ? d_in : 0;
  Matrix<T> out = xt::zeros<T>({tokens.shape(0), where == PositionChannels::reserved ? d_in + position_dim : d_in});
  xt::view(out, xt::all(), xt::range(0, d_in)) = tokens;
  for (std::size_t i = 0; i < height; ++i)
    for (std::size_t j = 0; j < width; ++j) {
      const double p1 = double(i), p2 = double(j);
      const std::array<double, position_dim> p{p1, p2, p1 * p1 + p2 * p2, 1.0};
      for (std::size_t c = 0; c < position_dim; ++c) out(i * width + j, first + c) += T(p[c]);
    }
  return out;
}

template <class T>
MhsaLayer<T> absolute_encoding_layer(const MhsaLayer<T>& relative,
                                     const std::vector<std::optional<std::array<int, 2>>>& targets, double alpha,
                                     PositionChannels where) {
  const std::size_t d_in = relative.in_dim();
  const std::size_t d = where == PositionChannels::reserved ? d_in + position_dim : d_in;
  const std::size_t first = where == PositionChannels::reserved ? d_in : 0;
  MhsaLayer<T> out{.encoding = relative.encoding, .heads = {}, .w_out = relative.w_out, .b_out = relative.b_out};
  for (std::size_t h = 0; h < relative.heads.size(); ++h) {
    const AttentionHead<T>& r = relative.heads[h];
    const std::size_t d_p = r.w_key_hat.shape(1);
    AttentionHead<T> head{.w_qry = xt::zeros<T>({d, key_dim}),
                          .w_key = xt::zeros<T>({d, key_dim}),
                          .w_key_hat = xt::zeros<T>({key_dim, d_p}),
                          .u = xt::zeros<T>({key_dim}),
                          .v = xt::zeros<T>({key_dim}),
                          .w_val = xt::zeros<T>({d, r.w_val.shape(1)})};
    xt::view(head.w_val, xt::range(0, d_in), xt::all()) = r.w_val;
    if (h < targets.size() && targets[h]) {
      const auto m = absolute_block(alpha, *targets[h]);
      for (std::size_t a = 0; a < key_dim; ++a) {
        head.w_qry(first + nonzero_rows[a], a) = T(1);  // selects p1, p2, 1 of the query
        for (std::size_t c = 0; c < position_dim; ++c) head.w_key(first + c, a) = T(m[nonzero_rows[a]][c]);
      }
    }
    out.heads.push_back(std::move(head));
  }
  check_shapes(out);
  return out;
}

double AbsoluteScoreRoundoff::operator()(double leak_bound) const {
  const double u = unit_roundoff, gamma = double(terms) * u;
  double total = 0;
  for (std::size_t h = 0; h < score_scale.size(); ++h)
    total += 4 * leak_bound * (2 * (gamma + u) * score_scale[h] + u) * abs_value_scale[h];
  return total;
}

double AbsoluteScoreRoundoff::largest_score_scale() const {
  return score_scale.empty() ? 0.0 : *std::max_element(score_scale.begin(), score_scale.end());
}

template <class T>
AbsoluteScoreRoundoff absolute_score_roundoff(const MhsaLayer<T>& layer, const Matrix<T>& tokens) {
  AbsoluteScoreRoundoff out;
  out.unit_roundoff = std::numeric_limits<T>::epsilon() / 2;
  const std::size_t d_h = layer.head_dim();
  const xt::xtensor<double, 2> x_abs = xt::abs(xt::cast<double>(tokens));
  for (std::size_t h = 0; h < layer.heads.size(); ++h) {
    const AttentionHead<T>& head = layer.heads[h];
    const xt::xtensor<double, 2> w_out = xt::cast<double>(xt::view(layer.w_out, xt::range(h * d_h, (h + 1) * d_h), xt::all()));
    const xt::xtensor<double, 2> m_abs = xt::linalg::dot(xt::abs(xt::cast<double>(head.w_val)), xt::abs(w_out));
    const double value_scale = max_abs_of_product(x_abs, m_abs);
    if (value_scale == 0) continue;  // a silent head moves nothing
    const xt::xtensor<double, 1> q = xt::amax(xt::linalg::dot(x_abs, xt::abs(xt::cast<double>(head.w_qry))), {0});
    const xt::xtensor<double, 1> k = xt::amax(xt::linalg::dot(x_abs, xt::abs(xt::cast<double>(head.w_key))), {0});
    out.score_scale.push_back(double(xt::sum(q * k)()));
    out.abs_value_scale.push_back(value_scale);
    out.terms = 2 * tokens.shape(1) + head.w_qry.shape(1);
  }
  return out;
}

template Matrix<float> with_positions(const Matrix<float>&, std::size_t, std::size_t, PositionChannels);
template Matrix<double> with_positions(const Matrix<double>&, std::size_t, std::size_t, PositionChannels);
template MhsaLayer<float> absolute_encoding_layer(const MhsaLayer<float>&,
                                                  const std::vector<std::optional<std::array<int, 2>>>&, double,
                                                  PositionChannels);
template MhsaLayer<double> absolute_encoding_layer(const MhsaLayer<double>&,
                                                   const std::vector<std::optional<std::array<int, 2>>>&, double,
                                                   PositionChannels);
template AbsoluteScoreRoundoff absolute_score_roundoff(const MhsaLayer<float>&, const Matrix<float>&);
template AbsoluteScoreRoundoff absolute_score_roundoff(const MhsaLayer<double>&, const Matrix<double>&);

}  // namespace attnconv
