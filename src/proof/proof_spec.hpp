#pragma once
// Declaring a proof: every field by name, its parameters parsed once into a
// typed struct `Params` (with a member `Dtype dtype`) by `parse`, which also
// checks them across keys (the kernel fits the image, enough heads, ...) and
// throws ParamError naming the key. The loader runs `parse` on every case
// before anything runs; the other hooks receive its result (each hook parses
// the case anew, so `parse` must be cheap and depend on the case alone):
//
//   const bool registered = register_proof(make_proof<Lemma1Params>({
//       .id = "cordonnier2020.lemma1", .paper = ..., .statement = ...,
//       .params = {ParamSpec{.name = "heads", ...}, dtype_param(), seed_param()},
//       .parse = parse,
//       .verify = {verify<float>, verify<double>},
//       .metrics = distance_metrics("..."),
//   }));
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "proof/proof.hpp"
#include "proof/dtype.hpp"

namespace attnconv {

// verify() once per dtype: {verify<float>, verify<double>}.
template <class Params> struct VerifyPerDtype {
  Outcome (*float32)(const Case&, const Params&) = nullptr;
  Outcome (*float64)(const Case&, const Params&) = nullptr;

  template <class T> Outcome operator()(T, const Case& c, const Params& p) const {
    if constexpr (std::is_same_v<T, float>) return float32(c, p);
    else return float64(c, p);
  }
};

template <class Params> struct ProofSpec {
  std::string id = {};
  std::string paper = {};
  std::string statement = {};
  std::vector<ParamSpec> params = {};
  std::function<Params(const Case&)> parse = {};
  VerifyPerDtype<Params> verify = {};
  std::vector<MetricSpec> metrics = {};
  // Bytes the case will need at its peak. May be empty.
  std::function<double(const Params&)> memory_estimate = {};
  // The tensors a case may load from .npy (see ProofDef). May be empty.
  std::function<TensorShapes(const Params&)> expected_tensors = {};
  // The parameters the loaded tensors determine (see ProofDef). May be empty.
  std::function<json(const Case&, const Params&)> loaded_params = {};
  // The figures of a case from its reported metrics (see ProofDef). May be empty.
  std::function<std::vector<FigureData>(const Case&, const Params&, const json& metrics)> figures = {};
  bool figures_per_case = false;  // see ProofDef
};

template <class Params> ProofDef make_proof(ProofSpec<Params> spec) {
  const auto parse = spec.parse;
  const VerifyPerDtype<Params> verify = spec.verify;
  ProofDef def{
      .id = std::move(spec.id),
      .paper = std::move(spec.paper),
      .statement = std::move(spec.statement),
      .params = std::move(spec.params),
      .validate = [parse](const Case& c) { (void)parse(c); },
      .verify =
          [parse, verify](const Case& c) {
            const Params p = parse(c);
            return with_dtype(p.dtype, [&](auto tag) { return verify(tag, c, p); });
          },
      .metrics = std::move(spec.metrics),
  };
  if (spec.memory_estimate)
    def.memory_estimate = [parse, f = spec.memory_estimate](const Case& c) { return f(parse(c)); };
  if (spec.expected_tensors)
    def.expected_tensors = [parse, f = spec.expected_tensors](const Case& c) { return f(parse(c)); };
  if (spec.loaded_params)
    def.loaded_params = [parse, f = spec.loaded_params](const Case& c) { return f(c, parse(c)); };
  if (spec.figures)
    def.figures = [parse, f = spec.figures](const Case& c, const json& metrics) { return f(c, parse(c), metrics); };
  def.figures_per_case = spec.figures_per_case;
  return def;
}

}  // namespace attnconv
