#include "run/case_run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "cases/case_weights.hpp"
#include "proof/batch_read.hpp"
#include "proof/npy.hpp"
#include "io/sizes.hpp"
#include "run/resources.hpp"
#include "run/dump_case.hpp"
#include "metrics/compare.hpp"

namespace attnconv {

namespace {

// reference_max_abs, reference_rel_l2 of the outcome's reference tensor against reference_output.
void compare_with_reference(const ProofDef& proof, const Case& c, Outcome& outcome) {
  if (!c.weights.contains("reference_output")) return;
  const auto found = std::find_if(outcome.tensors.begin(), outcome.tensors.end(),
                                  [&](const NamedTensor& t) { return t.name == outcome.reference_tensor; });
  if (found == outcome.tensors.end())
    throw std::logic_error("proof " + c.proof + " gives no tensor '" + outcome.reference_tensor +
                           "' to compare with reference_output");
  std::visit(
      [&](const auto& tensor) {
        using T = typename std::decay_t<decltype(tensor)>::value_type;
        std::vector<std::size_t> shape(tensor.shape().begin(), tensor.shape().end());
        // A whole-batch proof's tensor has the batch dimension of the input file.
        const bool whole = proof.whole_batch && c.batch > 0 && !shape.empty();
        if (whole) shape.erase(shape.begin());
        const xt::xarray<T> reference =
            whole ? load_case_batch<T>(c, "reference_output", shape) : load_case_tensor<T>(c, "reference_output", shape);
        const Difference d = compare(tensor, reference);
        outcome.set(metric::reference_max_abs, d.max_abs);
        outcome.set(metric::reference_rel_l2, d.rel_l2);
      },
      found->data);
}

// In float32 a round-off allowance is wide enough to hide the claim's own error (a finite-alpha bound, a
// gate's leak, the distance to a limit) where float64 shows it. So a float32 case holds to round-off only
// when the same case in float64 (its twin: the same seed and files, the tensors read in double) holds
// too; otherwise it takes the twin's verdict, "bound holds" or "fails" (issue 24, B4).
void judge_by_float64_twin(const ProofDef& proof, const Case& c, CaseResult& result) {
  Judgement& v = result.verdict;
  if (v.verdict != Verdict::holds || v.status != Status::pass || c.params.value("dtype", json()) != "float32") return;
  Case twin = c;
  twin.params["dtype"] = "float64";
  twin.prepared.reset();
  prepare_case(twin);
  const WidenedFloat32 widened;
  const Outcome twin_outcome = proof.verify(twin);
  const Judgement twin_verdict = judge(twin, twin_outcome);
  result.outcome.set(metric::float64_verdict, to_string(twin_verdict.verdict));
  if (twin_verdict.verdict == Verdict::holds || twin_verdict.verdict == Verdict::error) return;
  const std::string holds = "holds: ";
  const std::string own = v.message.rfind(holds, 0) == 0 ? v.message.substr(holds.size()) : v.message;
  v.verdict = twin_verdict.verdict == Verdict::fails ? Verdict::fails : Verdict::bound_holds;
  v.status = v.verdict == Verdict::fails ? Status::fail : Status::pass;
  v.message = to_string(v.verdict) + ": in float32 " + own + "; but in float64 the same case is '" +
              to_string(twin_verdict.verdict) + "' (" + twin_verdict.message.substr(0, twin_verdict.message.find(';')) +
              "), so what float32 measures here is the claim's own error, not round-off";
}

CaseResult run_one(const ProofDef& proof, const Case& c) {
  Outcome outcome = proof.verify(c);
  compare_with_reference(proof, c, outcome);
  Judgement verdict = judge(c, outcome);
  CaseResult result{std::move(outcome), std::move(verdict)};
  judge_by_float64_twin(proof, c, result);
  return result;
}

// Larger is worse: status, then a bound that holds above round-off, then max_abs (NaN worst).
std::tuple<int, int, double> badness(const CaseResult& r) {
  const int status = r.verdict.status == Status::error ? 2 : r.verdict.status == Status::fail ? 1 : 0;
  const json& max_abs = r.outcome.metrics.value("max_abs", json());
  const double value = max_abs.is_number() ? max_abs.get<double>() : 0.0;
  return {status, r.verdict.verdict == Verdict::bound_holds ? 1 : 0,
          std::isnan(value) ? std::numeric_limits<double>::infinity() : value};
}

// The samples' tensors of one name, stacked along a new first dimension.
NamedTensor stacked(const std::vector<CaseResult>& samples, std::size_t index) {
  return std::visit(
      [&](const auto& first) -> NamedTensor {
        using A = std::decay_t<decltype(first)>;
        std::vector<std::size_t> shape{samples.size()};
        shape.insert(shape.end(), first.shape().begin(), first.shape().end());
        A out(shape);
        auto at = out.begin();
        for (const auto& sample : samples) {
          const auto& data = std::get<A>(sample.outcome.tensors.at(index).data);
          if (data.shape() != first.shape()) throw std::logic_error("a dumped tensor changes shape between samples");
          at = std::copy(data.begin(), data.end(), at);
        }
        return {samples.front().outcome.tensors.at(index).name, std::move(out)};
      },
      samples.front().outcome.tensors.at(index).data);
}

}  // namespace

CaseResult run_verify(const Case& c) {
  const ProofDef& proof = *find_proof(c.proof);
  if (c.batch == 0 || proof.whole_batch) return run_one(proof, c);
  std::vector<CaseResult> samples;
  {
    const BatchRead batch;  // the batch's input (and reference_output) read once, each sample a slice of it
    for (std::size_t n = 0; n < c.batch; ++n) {
      Case sample = c;
      sample.sample = n;
      samples.push_back(run_one(proof, sample));
    }
  }
  std::size_t worst = 0;
  for (std::size_t n = 1; n < samples.size(); ++n)
    if (badness(samples[n]) > badness(samples[worst])) worst = n;
  json per_sample = json::array();
  for (const auto& sample : samples) per_sample.push_back(sample.outcome.metrics.value("max_abs", json()));

  const TensorShapes loads = proof.expected_tensors ? proof.expected_tensors(c) : TensorShapes{};
  const auto is_parameter = [&](const std::string& name) {
    return name == "conv_weight" || name == "conv_bias" || (loads.count(name) && !is_data_tensor(name));
  };
  std::vector<NamedTensor> tensors;
  for (std::size_t k = 0; k < samples[worst].outcome.tensors.size(); ++k) {
    const NamedTensor& tensor = samples[worst].outcome.tensors[k];
    tensors.push_back(is_parameter(tensor.name) ? tensor : stacked(samples, k));
  }
  // The reference distances are the batch's worst, whichever sample is worst by the claim (NaN stays NaN).
  json reference;
  for (const std::string& key : {metric::reference_max_abs.name, metric::reference_rel_l2.name})
    for (const auto& sample : samples) {
      const json& value = sample.outcome.metrics.value(key, json());
      if (!value.is_number()) continue;
      const double v = value.get<double>();
      if (!reference.contains(key) || std::isnan(v) || v > reference[key].get<double>()) reference[key] = v;
      if (std::isnan(v)) break;
    }
  CaseResult result = std::move(samples[worst]);
  for (const auto& [key, value] : reference.items()) result.outcome.metrics[key] = value;
  result.outcome.set(metric::max_abs_per_sample, per_sample);
  result.outcome.set(metric::worst_sample, worst);
  result.outcome.tensors = std::move(tensors);
  result.verdict.message += "; a batch of " + std::to_string(c.batch) + " samples, each checked: the metrics are of the worst, sample " +
                            std::to_string(worst);
  return result;
}

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

json case_entry(const Case& c) {
  json entry = {{"name", c.name},         {"proof", c.proof},          {"file", c.file},
                {"params", c.params},     {"expect", to_string(c.request.expect)},        {"sweep_group", c.base_name},
                {"sweep_point", c.sweep_point}};
  if (!c.weights_file.empty()) entry["weights_file"] = c.weights_file;
  if (!c.weights_file.empty()) entry["weights_prefix"] = c.weights_prefix;
  if (!c.weights.empty()) entry["weights"] = c.weights;
  if (!c.provenance.empty()) entry["provenance"] = c.provenance;
  if (c.batch > 0) entry["batch"] = c.batch;
  if (c.weights_partial) {
    json drawn = json::array();
    for (const auto& [name, source] : c.provenance.items())
      if (source.contains("drawn_from_seed") && name != "input") drawn.push_back(name);
    entry["weights_drawn"] = drawn;
  }
  return entry;
}

json error_entry(const Case& c, const std::string& message, double seconds) {
  json entry = case_entry(c);
  entry["status"] = to_string(Status::error);
  entry["verdict"] = to_string(Verdict::error);
  entry["metrics"] = json::object();
  entry["tolerance"] = c.request.tolerance;
  entry["message"] = "error: " + message;
  entry["seconds"] = seconds;
  return entry;
}

json run_case(const Case& c, const RunOptions& options) {
  json entry = case_entry(c);
  const auto start = std::chrono::steady_clock::now();
  const DumpedTensors dumped(!options.dump_dir.empty());
  try {
    const CaseResult result = run_verify(c);
    const Outcome& outcome = result.outcome;
    const Judgement& verdict = result.verdict;
    entry["status"] = to_string(verdict.status);
    entry["verdict"] = to_string(verdict.verdict);
    entry["metrics"] = outcome.metrics;
    entry["tolerance"] = verdict.tolerance;
    entry["message"] = verdict.message;
    if (!options.dump_dir.empty()) {
      const std::string dir = (std::filesystem::path(options.dump_dir) / c.name).string();
      dump_tensors(dir, outcome.tensors);
      write_dump_case(dir, c, entry, outcome.tensors);
    }
  } catch (const std::bad_alloc&) {
    return error_entry(c,
                       "out of memory: the machine could not give this case what it needed (its estimate was " +
                           format_bytes(case_memory_estimate(c)) +
                           "); run it alone, on a larger machine, or with smaller sizes",
                       seconds_since(start));
  } catch (const std::exception& e) {
    return error_entry(c, e.what(), seconds_since(start));
  }
  entry["seconds"] = seconds_since(start);
  return entry;
}

}  // namespace attnconv
