#include "construction/gaussian_attention.hpp"

#include <stdexcept>

#include <xtensor/xview.hpp>

namespace attnconv {

template <class T> MhsaLayer<T> to_mhsa_layer(const GaussianAttention<T>& g, bool content) {
  const std::size_t heads = g.centers.shape(0), d_in = g.w_val.shape(1), d_h = g.w_val.shape(2);
  const std::size_t d_k = (g.w_qry ? g.w_qry->shape(2) : 0) + 1;
  if (g.precisions.shape(0) != heads || g.w_val.shape(0) != heads || bool(g.w_qry) != bool(g.w_key))
    throw std::invalid_argument("to_mhsa_layer: centres, precisions and w_val need one entry per head, and w_qry "
                                "and w_key come together");
  MhsaLayer<T> out{.encoding = Encoding::quadratic_general, .heads = {}, .w_out = g.w_out, .b_out = g.b_out};
  for (std::size_t h = 0; h < heads; ++h) {
    AttentionHead<T> head{.w_qry = xt::zeros<T>({d_in, d_k}),
                          .w_key = xt::zeros<T>({d_in, d_k}),
                          .w_key_hat = xt::zeros<T>({d_k, std::size_t(5)}),
                          .u = xt::zeros<T>({d_k}),
                          .v = xt::zeros<T>({d_k}),
                          .w_val = xt::view(g.w_val, h)};
    if (g.w_qry && content) {
      xt::view(head.w_qry, xt::all(), xt::range(0, d_k - 1)) = xt::view(*g.w_qry, h);
      xt::view(head.w_key, xt::all(), xt::range(0, d_k - 1)) = xt::view(*g.w_key, h);
    }
    const double a11 = g.precisions(h, 0, 0), a12 = g.precisions(h, 0, 1), a22 = g.precisions(h, 1, 1);
    const double c1 = g.centers(h, 0), c2 = g.centers(h, 1);
    const double coefficients[5] = {-a11, -a22, -2 * a12, 2 * (a11 * c1 + a12 * c2), 2 * (a12 * c1 + a22 * c2)};
    for (std::size_t d = 0; d < 5; ++d) head.w_key_hat(d_k - 1, d) = T(coefficients[d]);
    head.v(d_k - 1) = T(1);
    out.heads.push_back(std::move(head));
  }
  check_shapes(out);
  return out;
}

template MhsaLayer<float> to_mhsa_layer(const GaussianAttention<float>&, bool);
template MhsaLayer<double> to_mhsa_layer(const GaussianAttention<double>&, bool);

}  // namespace attnconv
