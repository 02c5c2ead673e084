#include "mhsa/engine.hpp"

#include <algorithm>
#include <stdexcept>

#include "mhsa/dense_engine.hpp"
#include "mhsa/separable_engine.hpp"

namespace attnconv {

std::string to_string(Engine engine) {
  switch (engine) {
    case Engine::dense: return "dense";
    case Engine::separable: return "separable";
    case Engine::auto_: return "auto";
  }
  return "?";
}

Engine engine_from_string(const std::string& name) {
  if (name == "dense") return Engine::dense;
  if (name == "separable") return Engine::separable;
  if (name == "auto") return Engine::auto_;
  throw std::invalid_argument("unknown engine '" + name + "' (dense, separable or auto)");
}

double engine_memory_bytes(Engine ran, std::size_t height, std::size_t width, std::size_t d_in, std::size_t d_k,
                           std::size_t d_h, std::size_t d_out, std::size_t element_size) {
  const double n = double(height) * double(width), s = double(element_size);
  if (ran == Engine::separable)  // y; X W_val; two (H*W) x max(D_in, D_h) buffers; P_rows, P_cols
    return s * (n * (d_out + d_h + 2.0 * std::max(d_in, d_h)) + double(height) * height + double(width) * width);
  // y; X W_qry, X W_key, X W_val, (X W_qry + v) W^_key, u.(X W_key); per thread a block of scores
  const double threads = double(engine_threads());
  const double block = double(dense_block_rows(height * width, 0));
  return s * (n * (d_out + 3.0 * d_k + d_h + 6) + threads * block * (n + d_h));
}

template <class T> Engine resolve_engine(Engine engine, const MhsaLayer<T>& layer) {
  if (engine != Engine::auto_) return engine;
  return separable_exact(layer) ? Engine::separable : Engine::dense;
}

template <class T>
EngineResult<T> run_mhsa(Engine engine, const MhsaLayer<T>& layer, const Matrix<T>& x, std::size_t height,
                         std::size_t width) {
  const Engine ran = resolve_engine(engine, layer);
  const std::size_t d_p = std::size_t(encoding_dim(layer.encoding));
  if (ran == Engine::separable) {
    Matrix<T> y = mhsa_separable(layer, x, height, width);
    return {std::move(y), ran,
            separable_flops(height, width, layer.in_dim(), d_p, layer.head_dim(), layer.out_dim(), layer.heads.size())};
  }
  DenseStats stats;
  DenseOptions options;
  options.stats = &stats;
  Matrix<T> y = mhsa_dense(layer, x, height, width, options);
  return {std::move(y), ran,
          dense_flops(height * width, layer.in_dim(), layer.heads.front().w_qry.shape(1), d_p, layer.head_dim(),
                      layer.out_dim(), layer.heads.size()),
          stats.flops_skipped};
}

template <class T>
EngineResult<T> run_mhsa(Engine engine, const MhsaLayer<T>& layer, const Matrix<T>& x, std::size_t height,
                         std::size_t width, const QueryGrid& queries) {
  const Engine ran = resolve_engine(engine, layer);
  if (ran == Engine::separable) {
    if (!queries.within(height, width)) throw std::invalid_argument("run_mhsa: queries outside the image");
    Matrix<T> y = mhsa_separable(layer, x, height, width, queries);
    return {std::move(y), ran,
            separable_flops(height, width, layer.in_dim(), std::size_t(encoding_dim(layer.encoding)),
                            layer.head_dim(), layer.out_dim(), layer.heads.size(), queries)};
  }
  EngineResult<T> all = run_mhsa(ran, layer, x, height, width);
  if (!queries.within(height, width)) throw std::invalid_argument("run_mhsa: queries outside the image");
  Matrix<T> kept({queries.size(), all.y.shape(1)});
  for (std::size_t i = 0; i < queries.count[0]; ++i)
    for (std::size_t j = 0; j < queries.count[1]; ++j) {
      const T* from = &all.y(queries.at(0, i) * width + queries.at(1, j), 0);
      std::copy(from, from + all.y.shape(1), &kept(i * queries.count[1] + j, 0));
    }
  all.y = std::move(kept);
  return all;
}

template Engine resolve_engine(Engine, const MhsaLayer<float>&);
template Engine resolve_engine(Engine, const MhsaLayer<double>&);
template EngineResult<float> run_mhsa(Engine, const MhsaLayer<float>&, const Matrix<float>&, std::size_t, std::size_t);
template EngineResult<double> run_mhsa(Engine, const MhsaLayer<double>&, const Matrix<double>&, std::size_t,
                                       std::size_t);
template EngineResult<float> run_mhsa(Engine, const MhsaLayer<float>&, const Matrix<float>&, std::size_t, std::size_t,
                                      const QueryGrid&);
template EngineResult<double> run_mhsa(Engine, const MhsaLayer<double>&, const Matrix<double>&, std::size_t,
                                       std::size_t, const QueryGrid&);

}  // namespace attnconv
