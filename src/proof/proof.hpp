#pragma once
// A proof checks one published claim. Each lives in its own file in proofs/
// and registers itself there, like google/benchmark's BENCHMARK():
//
//   static const bool registered = register_proof({"cordonnier2020.theorem1", ...});
//
// The runner never lists proofs by hand.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>
#include <xtensor/xarray.hpp>

#include "metrics/compare.hpp"
#include "proof/figure.hpp"
#include "proof/metric.hpp"
#include "proof/params.hpp"

namespace attnconv {

// Whether a case expects its proof's claim to hold, or checks its converse
// ("expect": "fail": it passes only when the claim fails as the proof predicts).
enum class Expect { hold, fail };
std::string to_string(Expect expect);                 // "hold" | "fail"
std::optional<Expect> expect_from_string(const std::string& name);

// What a case asks of its proof besides its parameters: the tolerance it is
// judged by (empty: the proof's own) and what it expects. Proofs receive it
// explicitly (ProofSpec::check, verify) and do not read it off the case.
struct Request {
  json tolerance = json::object();  // {"max_abs": ..., "rel_l2": ...} or empty
  Expect expect = Expect::hold;
};

// The typed parameters a proof parsed from a case (proof/proof_spec.hpp):
// made once, when the loader prepares the case, and read by every hook.
struct PreparedParams {
  virtual ~PreparedParams() = default;
};

// One expanded case, as the loader checked it.
struct Case {
  std::string name;        // after sweep expansion: "<base>[alpha=8]"
  std::string base_name;   // the name in the case file (the sweep group)
  std::string proof;       // proof id
  std::string file;        // the case file it came from
  json params;             // every parameter of the proof, defaults filled in
  json sweep_point = json::object();  // the swept values of this case
  Request request;                    // its tolerance and expect
  // Tensor name -> source (proof/tensor_source.hpp): an .npy path relative
  // to `file`, or {"file": <.npz>, "entry": <name>}; with `weights_file`, the
  // loader fills it from the .npz's entries under `weights_prefix`.
  json weights = json::object();
  std::string weights_file;           // "weights": "<file>.npz" (a state_dict), or empty
  std::string weights_prefix;         // prepended to every module tensor's name in `weights_file`
  bool weights_partial = false;       // some module tensors loaded, the others drawn from the seed
  // Where each tensor comes from, set by the loader: name -> {"file", "bytes",
  // "sha256"} for a loaded .npy (an .npz entry adds "entry" and "entry_sha256"),
  // {"drawn_from_seed": S} for a drawn one.
  json provenance = json::object();
  // A batch input (N, C, H, W) or (N, C, L): N, checked sample by sample; 0:
  // the input has no batch dimension. `sample` is the one a run reads.
  std::size_t batch = 0;
  std::size_t sample = 0;
  // Its proof's typed parameters, parsed once by prepare_case (the loader does it).
  std::shared_ptr<const PreparedParams> prepared;
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
  json metrics = json::object();  // set through the proof's Metric handles
  void set(const Metric& m, json value) { metrics[m.name] = std::move(value); }
  const json& get(const Metric& m) const { return metrics.at(m.name); }
  bool has(const Metric& m) const { return metrics.contains(m.name); }
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

// While a DumpedTensors(false) lives on a thread (a run without --dump-tensors,
// run/case_run.cpp), the helpers that gather a proof's tensors (proof/case_tensors.hpp,
// proof/conv_case.hpp, theorem1_common.hpp) give only the outputs a case compares,
// "expected" and "actual" (the reference_output comparison and the verdict's
// non-finite check read them), not copies of its inputs and parameters, which only
// a dump writes. Without one, every tensor (DumpedTensors::wanted() is true).
class DumpedTensors {
 public:
  explicit DumpedTensors(bool wanted);
  ~DumpedTensors();
  DumpedTensors(const DumpedTensors&) = delete;
  DumpedTensors& operator=(const DumpedTensors&) = delete;

  static bool wanted();

 private:
  bool previous_;
};

// Sets max_abs and rel_l2, the distances every proof reports.
inline void set_distance(Outcome& out, const Difference& d) {
  out.set(metric::max_abs, d.max_abs);
  out.set(metric::rel_l2, d.rel_l2);
}

// A tensor a proof writes with --dump-tensors: DIR/<case name>/<name>.npy, in
// PyTorch layout; with a batch input the batch dimension comes first, except
// for the module's parameters.
struct TensorDump {
  std::string name;
  std::string meaning;          // what it holds, with its shape
  std::string only_when = {};   // empty: every case; else the condition
};

// Tensor name -> shape in PyTorch layout.
using TensorShapes = std::map<std::string, std::vector<std::size_t>>;

// A registered proof. Declared with proof/proof_spec.hpp's make_proof, which
// fills prepare, verify and the optional hooks from its typed declarations.
struct ProofDef {
  std::string id = {};
  std::string paper = {};
  std::string statement = {};
  std::vector<ParamSpec> params = {};
  // Parameters a proof no longer takes, with the one value they could have:
  // a case file or report giving that value is read without it.
  std::vector<std::pair<std::string, json>> retired = {};
  // The case's typed parameters, checked across keys (the kernel fits the
  // image, enough heads, ...); throws ParamError naming the key. Run once per
  // case by prepare_case; the other hooks read its result from Case::prepared.
  std::function<std::shared_ptr<const PreparedParams>(const Case&)> prepare = {};
  std::function<Outcome(const Case&)> verify = {};
  // Bytes the case will need at its peak, for `list` and --max-memory. May be empty.
  std::function<double(const Case&)> memory_estimate = {};
  // Every metric verify() reports (tests/unit/proof/test_metrics_declared.cpp checks them).
  std::vector<Metric> metrics = {};
  // Every tensor verify() dumps (tests/scripts/dump_files.py checks them; docs/tensor_dumps.md lists them).
  std::vector<TensorDump> dumps = {};
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
  // Whether verify() measures a batch input as one (load_case_batch): run once,
  // its reference tensor of the input's batch shape, in place of once per sample.
  bool whole_batch = false;
};

// The names of a proof's error metrics, in declaration order.
std::vector<std::string> error_metric_names(const ProofDef& proof);

// `params` without the proof's retired parameters that have their one value
// (an older report or case file); any other value of one is left for the
// caller's check to refuse.
json without_retired(const ProofDef& proof, json params);

// Parses c's parameters with its proof (ProofDef::prepare) into c.prepared.
// Throws ParamError naming the key, or InputError.
void prepare_case(Case& c);

bool register_proof(ProofDef proof);  // returns true, for `static const bool registered = ...`
const ProofDef* find_proof(const std::string& id);
std::vector<const ProofDef*> all_proofs();  // sorted by id

}  // namespace attnconv
