#pragma once
// Engine dispatch: run the MHSA layer with the engine a case asks for.
//   dense      the general Eq. 8 layer (dense_engine.hpp)
//   separable  exact for positional-only heads whose score splits (separable_engine.hpp);
//              refuses any other layer
//   auto_      separable where it is exact, dense otherwise
#include <string>

#include "parallel/threads.hpp"  // set_blas_threads, set_engine_threads
#include "mhsa/mhsa_layer.hpp"
#include "mhsa/query_grid.hpp"

namespace attnconv {

enum class Engine { dense, separable, auto_ };

std::string to_string(Engine engine);                   // "dense" | "separable" | "auto"
Engine engine_from_string(const std::string& name);     // throws std::invalid_argument

template <class T> struct EngineResult {
  Matrix<T> y;         // (H*W) x D_out
  Engine ran;          // dense or separable, never auto_
  double flops;        // the operations of the algorithm that ran (dense_flops / separable_flops)
  double flops_skipped = 0;  // of `flops`, left out because the weights were exactly 0 (dense)
};

template <class T>
EngineResult<T> run_mhsa(Engine engine, const MhsaLayer<T>& layer, const Matrix<T>& x, std::size_t height,
                         std::size_t width);

// The outputs at `queries` alone, (queries.size()) x D_out: the separable
// engine computes only those; the dense one computes every query and keeps those.
template <class T>
EngineResult<T> run_mhsa(Engine engine, const MhsaLayer<T>& layer, const Matrix<T>& x, std::size_t height,
                         std::size_t width, const QueryGrid& queries);

// Bytes an engine allocates at its peak (its output y included, its input x
// not) for an H x W image, elements of `element_size` bytes.
double engine_memory_bytes(Engine ran, std::size_t height, std::size_t width, std::size_t d_in, std::size_t d_k,
                           std::size_t d_h, std::size_t d_out, std::size_t element_size);

// The engine auto_ resolves to for this layer.
template <class T> Engine resolve_engine(Engine engine, const MhsaLayer<T>& layer);

}  // namespace attnconv
