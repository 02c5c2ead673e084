#include "construction/theorem1.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <xtensor-blas/xlinalg.hpp>

#include "tensor/random.hpp"

namespace attnconv {

double Precision2::smallest_eigenvalue() const {
  // Eigenvalues of [[a11, a12], [a12, a22]]: mean -/+ sqrt(half-difference^2 + a12^2).
  const double mean = (a11 + a22) / 2, half = (a11 - a22) / 2;
  return mean - std::hypot(half, a12);
}

std::vector<Precision2> random_precisions(std::uint64_t seed, int count) {
  Random random = Random(seed).stream(purpose_id("precision"));
  std::vector<Precision2> out;
  for (int h = 0; h < count; ++h) {
    const double theta = M_PI * (random.uniform() + 1) / 2, lambda2 = 1 + 1.5 * (random.uniform() + 1);
    const double c = std::cos(theta), s = std::sin(theta);
    out.push_back({c * c + lambda2 * s * s, (1 - lambda2) * s * c, s * s + lambda2 * c * c});
  }
  return out;
}

std::array<int, 2> kernel_center(std::array<int, 2> kernel) { return {(kernel[0] - 1) / 2, (kernel[1] - 1) / 2}; }

std::array<int, 2> target_shift(int p, int q, std::array<int, 2> kernel, std::array<int, 2> dilation) {
  const auto c = kernel_center(kernel);
  return {(p - c[0]) * dilation[0], (q - c[1]) * dilation[1]};
}

namespace {

// The factors of one kernel slice M = W_conv[:, :, p, q]^T (D_in x D_out):
// W_val (D_in x D_h) and the head's block of W_out (D_h x D_out) with
// W_val * block = M exactly when D_h >= D_out or D_h >= D_in (one factor a
// zero-padded identity, no factorisation), and the truncated SVD otherwise.
template <class T> std::pair<Matrix<T>, Matrix<T>> factor_slice(const Matrix<T>& m, std::size_t d_h) {
  const std::size_t d_in = m.shape(0), d_out = m.shape(1);
  Matrix<T> w_val = xt::zeros<T>({d_in, d_h});
  Matrix<T> block = xt::zeros<T>({d_h, d_out});
  if (d_h >= d_out) {
    for (std::size_t i = 0; i < d_in; ++i)  // W_val = [W_conv^T, 0]
      std::copy_n(m.data() + i * d_out, d_out, w_val.data() + i * d_h);
    for (std::size_t k = 0; k < d_out; ++k) block(k, k) = T(1);  // block = [I; 0]
    return {w_val, block};
  }
  if (d_h >= d_in) {
    for (std::size_t k = 0; k < d_in; ++k) w_val(k, k) = T(1);  // W_val = [I, 0]
    std::copy_n(m.data(), m.size(), block.data());             // block = [W_conv^T; 0]
    return {w_val, block};
  }
  // Truncated SVD in double precision: M = U S V^T, keep the D_h largest.
  const xt::xtensor<double, 2> md = xt::cast<double>(m);
  const auto [u, s, vt] = xt::linalg::svd(md, /*full_matrices=*/false);
  const std::size_t rank = std::min<std::size_t>(d_h, s.shape(0));
  for (std::size_t k = 0; k < rank; ++k) {
    for (std::size_t i = 0; i < d_in; ++i) w_val(i, k) = T(u(i, k) * s(k));
    for (std::size_t o = 0; o < d_out; ++o) block(k, o) = T(vt(k, o));
  }
  return {w_val, block};
}

// v of the head whose target shift is Delta. Cordonnier et al., Eq. 9, with
// r_delta = (|delta|^2, delta1, delta2) and W^_key = I:
//   v = -alpha (1, -2 Delta1, -2 Delta2),  so  v . r_delta = -alpha (|delta - Delta|^2 - |Delta|^2);
// quadratic_1d drops the first axis, quadratic_general puts the precision A in
// (theorem1.hpp). Each entry is -alpha times an exact coefficient: one rounding.
template <class T> Vector<T> positional_query(const Theorem1Options& o, std::array<int, 2> shift, std::size_t h) {
  const double alpha = o.alpha, shift1 = shift[0], shift2 = shift[1];
  const auto v = [alpha](std::initializer_list<double> coefficients) {
    Vector<T> out = xt::zeros<T>({coefficients.size()});
    std::size_t i = 0;
    for (const double c : coefficients) out(i++) = T(-alpha * c);
    return out;
  };
  switch (o.encoding) {
    case Encoding::quadratic:
      return v({1, -2 * shift1, -2 * shift2});
    case Encoding::quadratic_1d:
      return v({1, -2 * shift2});
    case Encoding::quadratic_general: {
      const Precision2& a = o.precision.at(h);
      const double a_shift1 = a.a11 * shift1 + a.a12 * shift2, a_shift2 = a.a12 * shift1 + a.a22 * shift2;  // A Delta
      return v({a.a11, a.a22, 2 * a.a12, -2 * a_shift1, -2 * a_shift2});
    }
  }
  throw std::logic_error("positional_query: unknown encoding");
}

}  // namespace

template <class T>
MhsaLayer<T> theorem1_layer(const Kernel<T>& w_conv, const std::optional<Vector<T>>& bias,
                            const Theorem1Options& options) {
  return theorem1_layer(kernel_slices_t(w_conv), {int(w_conv.shape(2)), int(w_conv.shape(3))}, bias, options);
}

template <class T>
MhsaLayer<T> theorem1_layer(const std::vector<Matrix<T>>& slices, std::array<int, 2> kernel,
                            const std::optional<Vector<T>>& bias, const Theorem1Options& options) {
  if (slices.size() != std::size_t(kernel[0] * kernel[1])) throw std::invalid_argument("theorem1_layer: a slice per kernel position");
  const std::size_t d_out = slices[0].shape(1), d_in = slices[0].shape(0);
  if (options.heads < 1 || options.head_dim < 1) throw std::invalid_argument("theorem1_layer: heads, head_dim >= 1");
  const std::size_t heads = std::size_t(options.heads), d_h = std::size_t(options.head_dim);
  const std::size_t d_p = std::size_t(encoding_dim(options.encoding)), d_k = d_p;  // W^_key = I_{D_p}
  if (options.encoding == Encoding::quadratic_1d && kernel[0] != 1)
    throw std::invalid_argument("theorem1_layer: the 1D encoding needs a 1 x K kernel");
  if (options.encoding == Encoding::quadratic_general &&
      options.precision.size() < std::min<std::size_t>(heads, std::size_t(kernel[0] * kernel[1])))
    throw std::invalid_argument("theorem1_layer: quadratic_general needs a precision matrix per head");

  MhsaLayer<T> layer;
  layer.encoding = options.encoding;
  layer.w_out = xt::zeros<T>({heads * d_h, d_out});
  layer.b_out = bias ? *bias : Vector<T>(xt::zeros<T>({d_out}));
  for (std::size_t h = 0; h < heads; ++h) {
    AttentionHead<T> head;
    head.w_qry = xt::zeros<T>({d_in, d_k});
    head.w_key = xt::zeros<T>({d_in, d_k});
    head.w_key_hat = xt::eye<T>(d_p);
    head.u = xt::zeros<T>({d_k});
    head.v = xt::zeros<T>({d_k});
    head.w_val = xt::zeros<T>({d_in, d_h});
    if (h < std::size_t(kernel[0] * kernel[1])) {
      const int p = int(h) / kernel[1], q = int(h) % kernel[1];
      head.v = positional_query<T>(options, target_shift(p, q, kernel, options.dilation), h);
      auto [w_val, block] = factor_slice(slices[h], d_h);  // h = p K2 + q
      head.w_val = std::move(w_val);
      std::copy_n(block.data(), block.size(), layer.w_out.data() + h * d_h * d_out);  // rows h D_h ... (h+1) D_h
    }
    layer.heads.push_back(std::move(head));
  }
  return layer;
}

template <class T> double eckart_young_tail(const Kernel<T>& w_conv, int head_dim) {
  return eckart_young_tail(kernel_slices_t(w_conv), head_dim);
}

template <class T> double eckart_young_tail(const std::vector<Matrix<T>>& slices, int head_dim) {
  double tail = 0;
  for (const Matrix<T>& slice : slices) {  // positions (p, q) in row-major order
    const xt::xtensor<double, 2> m = xt::cast<double>(slice);
    const auto sigma = std::get<1>(xt::linalg::svd(m, false, /*compute_uv=*/false));
    for (std::size_t k = std::size_t(head_dim); k < sigma.shape(0); ++k) tail += sigma(k) * sigma(k);
  }
  return std::sqrt(tail);
}

template <class T>
Image<T> align_to_convolution(const Image<T>& padded_out, std::array<int, 2> kernel, const ConvGeometry& g,
                              std::array<int, 2> output_size) {
  const auto c = kernel_center(kernel);
  Image<T> out({padded_out.shape(0), std::size_t(output_size[0]), std::size_t(output_size[1])});
  for (std::size_t o = 0; o < padded_out.shape(0); ++o)
    for (int i = 0; i < output_size[0]; ++i)
      for (int j = 0; j < output_size[1]; ++j)
        out(o, i, j) = padded_out(o, i * g.stride[0] + c[0] * g.dilation[0], j * g.stride[1] + c[1] * g.dilation[1]);
  return out;
}

template MhsaLayer<float> theorem1_layer(const Kernel<float>&, const std::optional<Vector<float>>&,
                                        const Theorem1Options&);
template MhsaLayer<double> theorem1_layer(const Kernel<double>&, const std::optional<Vector<double>>&,
                                         const Theorem1Options&);
template MhsaLayer<float> theorem1_layer(const std::vector<Matrix<float>>&, std::array<int, 2>,
                                        const std::optional<Vector<float>>&, const Theorem1Options&);
template MhsaLayer<double> theorem1_layer(const std::vector<Matrix<double>>&, std::array<int, 2>,
                                         const std::optional<Vector<double>>&, const Theorem1Options&);
template double eckart_young_tail(const Kernel<float>&, int);
template double eckart_young_tail(const Kernel<double>&, int);
template double eckart_young_tail(const std::vector<Matrix<float>>&, int);
template double eckart_young_tail(const std::vector<Matrix<double>>&, int);
template Image<float> align_to_convolution(const Image<float>&, std::array<int, 2>, const ConvGeometry&,
                                           std::array<int, 2>);
template Image<double> align_to_convolution(const Image<double>&, std::array<int, 2>, const ConvGeometry&,
                                            std::array<int, 2>);

}  // namespace attnconv
