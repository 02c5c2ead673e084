#pragma once
// A case's "weights" (docs/cases.md): the forms a case file gives them in,
// their resolution into one source per tensor, and the check of every source
// against the proof's declared tensors before anything runs.
//   "weights": {"input": "x.npy", "conv_weight": {"file": "m.npz", "entry": "w"}}
//   "weights": "model.npz", "weights_prefix": "layer1.0.conv1."   (a state_dict)
// An .npz names a convolution's kernel and bias as PyTorch does (`weight`,
// `bias`), every other tensor by the proof's own name, under the prefix;
// `input` and `reference_output` are read without it.
#include <map>
#include <string>
#include <vector>

#include "proof/proof.hpp"
#include "proof/tensor_source.hpp"

namespace attnconv {

// The name of a proof's tensor in a PyTorch state_dict: conv_weight -> weight,
// conv_bias -> bias, any other name unchanged.
std::string state_dict_name(const std::string& tensor);

// Reads "weights", "weights_prefix" and "weights_partial" of a case object
// into `c` (the .npz form is resolved by resolve_weights). `where` starts
// every message: "<file>: case '<name>': ". Throws InputError.
void read_weights_keys(const json& object, Case& c, const std::string& where);

// Memo of the files a case object's sweep reads more than once.
struct WeightsMemo {
  std::map<std::string, std::vector<std::string>> npz_names;  // .npz path -> its entries
  std::map<std::string, SourceCheck> checks;                  // source|dtype -> its check
  std::map<std::string, std::uint64_t> read_bytes;            // source|dtype -> what reading it took
  double max_memory = 0;  // --max-memory (0: the default): bounds what the .npz entries of one case take to read
};

// The .npz form: fills c.weights with every entry under c.weights_prefix (and
// input, reference_output), by the proof's tensor names. Throws InputError.
void resolve_weights(Case& c, WeightsMemo& memo);

// Every source of c.weights against the proof's declared tensors (known name,
// readable file of the case's dtype and shape, finite; a batch input
// (N, ...)); no module tensor missing unless weights_partial; records the
// provenance of every tensor and c.batch. Throws InputError.
void check_weights(Case& c, const ProofDef& proof, WeightsMemo& memo);

}  // namespace attnconv
