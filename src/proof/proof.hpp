#pragma once
// A proof checks one published claim. Each lives in its own file in proofs/
// and registers itself there, like google/benchmark's BENCHMARK():
//
//   static const bool registered = register_proof({"cordonnier2020.theorem1", ...});
//
// The runner never lists proofs by hand.
#include <functional>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>
#include <xtensor/xarray.hpp>

#include "proof/figure.hpp"
#include "proof/params.hpp"

namespace attnconv {

// One expanded case, as the loader checked it.
struct Case {
  std::string name;        // after sweep expansion: "<base>[alpha=8]"
  std::string base_name;   // the name in the case file (the sweep group)
  std::string proof;       // proof id
  std::string file;        // the case file it came from
  json params;             // every parameter of the proof, defaults filled in
  json sweep_point = json::object();  // the swept values of this case
  json tolerance = json::object();    // {"max_abs": ..., "rel_l2": ...} or empty
  // Tensor name -> source (proof/tensor_source.hpp): an .npy path relative
  // to `file`, or {"file": <.npz>, "entry": <name>}; with `weights_file`, the
  // loader fills it from the .npz's entries under `weights_prefix`.
  json weights = json::object();
  std::string weights_file;           // "weights": "<file>.npz" (a state_dict), or empty
  std::string weights_prefix;         // prepended to every module tensor's name in `weights_file`
  bool weights_partial = false;       // some module tensors loaded, the others drawn from the seed
  std::string expect = "hold";        // "hold" | "fail"
  // Where each tensor comes from, set by the loader: name -> {"file", "bytes",
  // "sha256"} for a loaded .npy (an .npz entry adds "entry" and "entry_sha256"),
  // {"drawn_from_seed": S} for a drawn one.
  json provenance = json::object();
  // A batch input (N, C, H, W) or (N, C, L): N, checked sample by sample; 0:
  // the input has no batch dimension. `sample` is the one a run reads.
  std::size_t batch = 0;
  std::size_t sample = 0;
};

// A tensor to dump as .npy, in PyTorch layout.
struct NamedTensor {
  std::string name;
  std::variant<xt::xarray<float>, xt::xarray<double>> data;
};

// The converse side of a claim ("expect": "fail"): the failure a proof
// predicts. The case fails as predicted only when the error metric `metric`
// is finite, positive and at least `floor` (less the floor's own round-off).
struct PredictedFailure {
  std::string metric;    // an error metric of the proof
  double floor = 0;      // the least failure the proof predicts
  double roundoff = 0;   // the rounding error of computing `metric` and `floor`
  std::string reason;    // plain words: why it must fail by at least `floor`
};

// What verify() found. `metrics` has at least max_abs and rel_l2.
struct Outcome {
  json metrics = json::object();
  std::string message;                        // plain words: why it failed, or notes
  json default_tolerance = json::object();    // used when the case gives none
  // Without a case tolerance: within this, the claim is reached to round-off
  // (verdict "holds"); within default_tolerance only, the proof's bound holds
  // but the claim is approached, not reached (verdict "bound holds"). Empty:
  // default_tolerance is itself the round-off criterion.
  json roundoff_tolerance = json::object();
  std::optional<PredictedFailure> predicted_failure;  // for "expect": "fail"; none: no converse to confirm
  std::vector<NamedTensor> tensors;           // "input", "expected", "actual", parameters...
  // The tensor of `tensors` a case's "reference_output" (an outside
  // implementation's output for the same input) is compared with.
  std::string reference_tensor = "expected";
};

// A metric a proof reports, for the report schema (reports/schema.json) and
// the tolerances a case may give. `type` is a JSON Schema type: "number" (null
// allowed: NaN/Inf are written as null), "integer", "string", "boolean",
// "array" or "object".
struct MetricSpec {
  std::string name;
  std::string type;
  std::string help;
  bool always = true;     // present in every non-error case (else only sometimes)
  bool error = false;     // a distance between the claim and its reference: the only metrics a tolerance may name
  bool nullable = false;  // may be null (besides a non-finite number)
};

// Tensor name -> shape in PyTorch layout.
using TensorShapes = std::map<std::string, std::vector<std::size_t>>;

// A registered proof. Declared with proof/proof_spec.hpp's make_proof, which
// fills validate, verify and the optional hooks from one typed `parse`.
struct ProofDef {
  std::string id = {};
  std::string paper = {};
  std::string statement = {};
  std::vector<ParamSpec> params = {};
  // Checks across parameters (the kernel fits the image, enough heads, ...);
  // throws ParamError naming the key. May be empty.
  std::function<void(const Case&)> validate = {};
  std::function<Outcome(const Case&)> verify = {};
  // Bytes the case will need at its peak, for `list` and --max-memory. May be empty.
  std::function<double(const Case&)> memory_estimate = {};
  // Every metric verify() reports (tests/unit/proof/test_metrics_declared.cpp checks them).
  std::vector<MetricSpec> metrics = {};
  // The tensors a case may load from .npy ("weights"): name -> shape in
  // PyTorch layout. The loader checks every file against it before anything
  // runs. May be empty: then any name is accepted, with dtype and finiteness
  // checked but not the shape.
  std::function<TensorShapes(const Case&)> expected_tensors = {};
  // The parameters the case's loaded tensors determine (ACmix: "rates" from
  // rate1 and rate2), run by the loader after checking the tensors: they
  // replace the defaults in the case's params, and a case file giving another
  // value is refused. May be empty.
  std::function<json(const Case&)> loaded_params = {};
  // The figures `attnconv plot` draws for a case of a report, computed from
  // the case as verify() computes it and from the metrics the report gives it;
  // throws (the reason in plain words) when they cannot be drawn. May be empty:
  // no figure.
  std::function<std::vector<FigureData>(const Case&, const json& metrics)> figures = {};
  // Whether `plot` asks every case for its figures, or only the first case of
  // each sweep group.
  bool figures_per_case = false;
};

// max_abs and rel_l2, the error metrics every proof reports, followed by the
// proof's own metrics `more`.
std::vector<MetricSpec> distance_metrics(const std::string& what = "the claim against its reference",
                                         std::vector<MetricSpec> more = {});

// The names of a proof's error metrics, in declaration order.
std::vector<std::string> error_metric_names(const ProofDef& proof);

bool register_proof(ProofDef proof);  // returns true, for `static const bool registered = ...`
const ProofDef* find_proof(const std::string& id);
std::vector<const ProofDef*> all_proofs();  // sorted by id

}  // namespace attnconv
