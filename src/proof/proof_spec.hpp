#pragma once
// Declaring a proof: every field by name; its parameters declared once, each
// bound to a member of a typed struct `Params` (with a member `Dtype dtype`)
// by proof/field.hpp, from which the loader's checks, the defaults and the
// typed reads come. `check` adds what the per-key checks cannot see (checks
// across keys, members derived from several) and throws ParamError naming the
// key. The loader prepares every case once, before anything runs; every other
// hook receives the prepared `Params`:
//
//   const bool registered = register_proof(make_proof<Lemma1Params>({
//       .id = "cordonnier2020.lemma1", .paper = ..., .statement = ...,
//       .params = {field(&Lemma1Params::heads, {.name = "heads", .help = "N_h", .minimum = 1}), ...,
//                  dtype_field(&Lemma1Params::dtype), seed_field(&Lemma1Params::seed)},
//       .verify = {verify<float>, verify<double>},
//       .metrics = distance_metrics("..."),
//   }));
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "proof/dtype.hpp"
#include "proof/field.hpp"
#include "proof/memory.hpp"
#include "proof/npy.hpp"
#include "proof/proof.hpp"

namespace attnconv {

template <class Params> struct Prepared final : PreparedParams {
  explicit Prepared(Params p) : params(std::move(p)) {}
  Params params;
};

// The typed parameters the loader prepared for `c` (prepare_case).
template <class Params> const Params& prepared_params(const Case& c) {
  const auto* held = dynamic_cast<const Prepared<Params>*>(c.prepared.get());
  if (!held) throw std::logic_error("case '" + c.name + "' was not prepared for proof " + c.proof);
  return held->params;
}

// verify() once per dtype, {verify<float>, verify<double>}: each
// Outcome(const Case&, const Params&), or with a third parameter
// `const Request&` when the outcome depends on the case's tolerance or expect.
template <class Params> class VerifyPerDtype {
 public:
  using Fn = std::function<Outcome(const Case&, const Params&, const Request&)>;
  VerifyPerDtype() = default;
  template <class F32, class F64> VerifyPerDtype(F32 f32, F64 f64) : float32_(adapt(f32)), float64_(adapt(f64)) {}

  template <class T> Outcome operator()(T, const Case& c, const Params& p, const Request& r) const {
    if constexpr (std::is_same_v<T, float>) return float32_(c, p, r);
    else return float64_(c, p, r);
  }

 private:
  template <class F> static Fn adapt(F f) {
    if constexpr (std::is_invocable_v<F, const Case&, const Params&, const Request&>) return f;
    else return [f](const Case& c, const Params& p, const Request&) { return f(c, p); };
  }
  Fn float32_, float64_;
};

template <class Params> struct ProofSpec {
  std::string id = {};
  std::string paper = {};
  std::string statement = {};
  std::vector<Field<Params>> params = {};
  std::vector<std::pair<std::string, json>> retired = {};  // see ProofDef
  // The tensors a case may name in "weights" (a misspelt name must not fall
  // back to random numbers: InputError with the closest name). Empty: any.
  std::vector<std::string> tensors = {};
  // Checks across keys and members derived from several; throws ParamError
  // naming the key (or InputError for unknown weights). May be empty.
  std::function<void(Params&, const Case&, const Request&)> check = {};
  VerifyPerDtype<Params> verify = {};
  std::vector<Metric> metrics = {};
  std::vector<TensorDump> dumps = {};  // see ProofDef
  // Bytes the case will need at its peak: process_bytes (proof/memory.hpp) plus the tensors alive
  // at the peak, each term named; for the dtype of `Params` (the float64 twin of a float32 case is
  // added by make_proof). May be empty: then run/resources.cpp's fallback.
  // The case gives what Params do not: its batch (Case::batch, a whole_batch proof's samples).
  std::function<double(const Case&, const Params&)> memory_estimate = {};
  // The tensors a case may load from .npy (see ProofDef). May be empty.
  std::function<TensorShapes(const Params&)> expected_tensors = {};
  // The parameters the loaded tensors determine (see ProofDef). May be empty.
  std::function<json(const Case&, const Params&)> loaded_params = {};
  // The figures of a case from its reported metrics (see ProofDef). May be empty.
  std::function<std::vector<FigureData>(const Case&, const Params&, const json& metrics)> figures = {};
  bool figures_per_case = false;  // see ProofDef
  bool whole_batch = false;       // see ProofDef
};

template <class Params> ProofDef make_proof(ProofSpec<Params> spec) {
  std::vector<ParamSpec> specs;
  for (const Field<Params>& f : spec.params) specs.insert(specs.end(), f.specs.begin(), f.specs.end());
  const auto params = &prepared_params<Params>;
  ProofDef def{
      .id = std::move(spec.id),
      .paper = std::move(spec.paper),
      .statement = std::move(spec.statement),
      .params = std::move(specs),
      .retired = std::move(spec.retired),
      .prepare =
          [fields = std::move(spec.params), tensors = std::move(spec.tensors),
           check = spec.check](const Case& c) -> std::shared_ptr<const PreparedParams> {
            if (!tensors.empty()) check_tensor_names(c, tensors);
            Params p{};
            for (const Field<Params>& f : fields) f.read(c.params, p);
            if (check) check(p, c, c.request);
            return std::make_shared<const Prepared<Params>>(std::move(p));
          },
      .verify =
          [params, verify = spec.verify](const Case& c) {
            const Params& p = params(c);
            return with_dtype(p.dtype, [&](auto tag) { return verify(tag, c, p, c.request); });
          },
      .metrics = std::move(spec.metrics),
      .dumps = std::move(spec.dumps),
  };
  // A float32 case that holds also runs its float64 twin (run/case_run.cpp) while its own outcome is
  // kept: both are counted (the process once).
  if (spec.memory_estimate)
    def.memory_estimate = [params, f = spec.memory_estimate](const Case& c) {
      const Params& p = params(c);
      if (p.dtype != Dtype::float32) return f(c, p);
      Params twin = p;
      twin.dtype = Dtype::float64;
      return f(c, p) + std::max(0.0, f(c, twin) - process_bytes);
    };
  if (spec.expected_tensors)
    def.expected_tensors = [params, f = spec.expected_tensors](const Case& c) { return f(params(c)); };
  if (spec.loaded_params)
    def.loaded_params = [params, f = spec.loaded_params](const Case& c) { return f(c, params(c)); };
  if (spec.figures)
    def.figures = [params, f = spec.figures](const Case& c, const json& metrics) { return f(c, params(c), metrics); };
  def.figures_per_case = spec.figures_per_case;
  def.whole_batch = spec.whole_batch;
  return def;
}

}  // namespace attnconv
