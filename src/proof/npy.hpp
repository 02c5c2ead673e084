#pragma once
#include <cstdint>
// .npy input of a case's tensors (through the reader of npy_check.hpp, the
// one the loader checks files with) and output of its dumps (xtensor's npy).
#include <string>
#include <vector>

#include "proof/proof.hpp"

namespace attnconv {

// Loads `key` of case.weights (an .npy or .npz entry, relative to the case
// file) as T with exactly `shape`; of a batch input (and its reference_output),
// the case's sample. Throws InputError naming the file, the case and the key.
template <class T> xt::xarray<T> load_case_tensor(const Case& c, const std::string& key, const std::vector<std::size_t>& shape);

// Loads a data tensor (input, reference_output) with every sample of a batch:
// shape (N, sample_shape...) for a batch input, (1, sample_shape...) without
// one. Throws InputError naming the file, the case and the key.
// Reads c's tensors (the ones whose digest the loader recorded, together at
// most max_bytes) ahead of its run, checked against those digests: the runner
// calls it before it starts the case's process, which then takes them from
// memory it shares with the runner instead of reading them. The tensors of the
// case prefetched before are kept where c uses them too (the Theorem 1 and
// decomposition cases of one exported layer read the same .npz), the others
// dropped. A tensor the case takes so is one the loader's digest names; one
// not prefetched (another dtype, a file changed since, a problem) is read as
// before, and its problem reported by the case.
void prefetch_case_tensors(const Case& c, std::uint64_t max_bytes);

template <class T>
xt::xarray<T> load_case_batch(const Case& c, const std::string& key, const std::vector<std::size_t>& sample_shape);

bool has_case_tensor(const Case& c, const std::string& key);

// Every key of case.weights must be one of `known`: a typo must not fall back
// silently to random numbers. Throws InputError naming the key, with the
// closest known name.
void check_tensor_names(const Case& c, const std::vector<std::string>& known);

// Writes every tensor of `tensors` as DIR/<name>.npy.
void dump_tensors(const std::string& dir, const std::vector<NamedTensor>& tensors);

}  // namespace attnconv
