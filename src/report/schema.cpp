#include "report/schema.hpp"

#include <cmath>

#include "proof/proof.hpp"
#include "report/report.hpp"
#include "proof/verdict.hpp"

namespace attnconv {

namespace {

const char* const dialect = "https://json-schema.org/draft/2020-12/schema";

json integer_schema(const ParamSpec& spec) {
  json s = {{"type", "integer"}};
  if (spec.minimum) s[spec.exclusive_minimum ? "exclusiveMinimum" : "minimum"] = std::ceil(*spec.minimum) == *spec.minimum ? json(static_cast<long long>(*spec.minimum)) : json(*spec.minimum);
  return s;
}

json non_negative_int() { return {{"type", "integer"}, {"minimum", 0}}; }

// A tensor's source (proof/tensor_source.hpp): an .npy path or an .npz entry.
json tensor_source_schema() {
  return {{"oneOf", json::array({{{"type", "string"}},
                                 {{"type", "object"},
                                  {"required", {"file", "entry"}},
                                  {"additionalProperties", false},
                                  {"properties", {{"file", {{"type", "string"}, {"pattern", "\\.npz$"}}},
                                                  {"entry", {{"type", "string"}}}}}}})}};
}

json int_array(std::size_t size, json item) {
  return {{"type", "array"}, {"items", std::move(item)}, {"minItems", size}, {"maxItems", size}};
}

std::vector<std::string> verdict_words() {
  std::vector<std::string> words;
  for (const Verdict v : all_verdicts) words.push_back(to_string(v));
  return words;
}

json metric_schema(const Metric& metric) {
  const std::string type = to_string(metric.type);
  json s = metric.type == MetricType::number || metric.nullable ? json{{"type", {type, "null"}}} : json{{"type", type}};
  const std::string help = (metric.error ? "error metric (a tolerance may name it): " : "") + metric.help;
  if (!help.empty()) s["description"] = help;
  return s;
}

// {"if": {proof is id}, "then": then}
json when_proof(const std::string& id, json then) {
  return {{"if", {{"properties", {{"proof", {{"const", id}}}}}, {"required", json::array({"proof"})}}}, {"then", std::move(then)}};
}

json params_object(const ProofDef& proof, bool all_required) {
  json properties = json::object(), required = json::array();
  for (const auto& spec : proof.params) {
    properties[spec.name] = param_schema(spec);
    if (all_required || spec.default_value.is_null()) required.push_back(spec.name);
  }
  // A retired parameter, as older case files and reports give it: its one value.
  for (const auto& [name, value] : proof.retired)
    properties[name] = {{"const", value}, {"description", "no longer a parameter: read without it"}};
  return {{"type", "object"}, {"properties", properties}, {"required", required}, {"additionalProperties", false}};
}

json proof_ids() {
  json ids = json::array();
  for (const auto* proof : all_proofs()) ids.push_back(proof->id);
  return ids;
}

}  // namespace

json param_schema(const ParamSpec& spec) {
  json s;
  switch (spec.kind) {
    case ParamKind::integer: s = integer_schema(spec); break;
    case ParamKind::number: {
      s = {{"type", "number"}};
      if (spec.minimum) s[spec.exclusive_minimum ? "exclusiveMinimum" : "minimum"] = *spec.minimum;
      break;
    }
    case ParamKind::boolean: s = {{"type", "boolean"}}; break;
    case ParamKind::bool_pair: {
      const json item = {{"type", "boolean"}};
      s = {{"oneOf", {item, {{"type", "array"}, {"items", item}, {"minItems", 2}, {"maxItems", 2}}}}};
      break;
    }
    case ParamKind::string: {
      s = {{"type", "string"}};
      if (!spec.choices.empty()) s["enum"] = spec.choices;
      break;
    }
    case ParamKind::int_pair: {
      const json item = integer_schema(spec);
      s = {{"oneOf", {item, int_array(2, item)}}};
      break;
    }
    case ParamKind::int_pair_or_auto: {
      const json item = integer_schema(spec);
      s = {{"oneOf", {{{"const", "auto"}}, item, int_array(2, item)}}};
      break;
    }
    case ParamKind::number_pair: {
      json item = {{"type", "number"}};
      if (spec.minimum) item[spec.exclusive_minimum ? "exclusiveMinimum" : "minimum"] = *spec.minimum;
      s = int_array(2, item);
      break;
    }
    case ParamKind::padding:
      s = {{"oneOf",
            {non_negative_int(), {{"enum", {"same", "valid"}}}, int_array(2, non_negative_int()),
             int_array(4, non_negative_int())}}};
      break;
  }
  if (s.is_null()) s = json::object();  // a kind this generator does not know yet: any value
  if (!spec.help.empty()) s["description"] = spec.help;
  if (!spec.default_value.is_null()) s["default"] = spec.default_value;
  return s;
}

json case_file_schema() {
  json per_proof = json::array();
  for (const auto* proof : all_proofs()) {
    json sweep_properties = json::object();
    for (const auto& spec : proof->params)
      sweep_properties[spec.name] = {{"type", "array"}, {"minItems", 1}, {"items", param_schema(spec)}};
    json then = {{"properties",
                  {{"params", params_object(*proof, false)},
                   {"sweep", {{"type", "object"}, {"properties", sweep_properties}, {"additionalProperties", false}}},
                   {"tolerance", {{"propertyNames", {{"enum", error_metric_names(*proof)}}}}}}}};
    if (!then["properties"]["params"]["required"].empty()) then["required"] = json::array({"params"});
    per_proof.push_back(when_proof(proof->id, then));
  }
  const json case_schema = {
      {"type", "object"},
      {"required", {"name", "proof"}},
      {"additionalProperties", false},
      {"properties",
       {{"name", {{"type", "string"}, {"minLength", 1}, {"maxLength", 1024}, {"pattern", "^(?!\\.\\.?$)[^/\\\\\\x00]+$"},
                  {"description", "unique; names the dump folder, so no '/', '\\\\' or NUL, and not '.' or '..'"}}},
        {"description", {{"type", "string"}}},
        {"proof", {{"enum", proof_ids()}}},
        {"params", {{"type", "object"}}},
        {"sweep", {{"type", "object"}, {"description", "parameter -> non-empty list of values (cartesian product)"}}},
        {"tolerance", {{"type", "object"}, {"additionalProperties", {{"type", "number"}, {"minimum", 0}}},
                       {"description", "error metric -> largest value for which the claim holds"}}},
        {"expect", {{"enum", {to_string(Expect::hold), to_string(Expect::fail)}}}},
        {"weights",
         {{"oneOf", json::array({{{"type", "string"}, {"pattern", "\\.npz$"},
                                  {"description", "an .npz file (numpy.savez of a state_dict), relative to the case file"}},
                                 {{"type", "object"}, {"additionalProperties", tensor_source_schema()},
                                  {"description", "tensor name -> .npy path relative to the case file, or an .npz entry"}}})}}},
        {"weights_prefix", {{"type", "string"}, {"description", "with an .npz: prepended to the name of every module tensor"}}},
        {"weights_partial", {{"type", "boolean"},
                             {"description", "load some of the module's tensors and draw the others from the seed"}}}}},
      {"allOf", per_proof}};
  return {{"$schema", dialect},
          {"$id", "https://attnconv.invalid/cases/schema.json"},
          {"title", "attnconv case file"},
          {"description", "Generated by `attnconv schema cases` from the proof registry; do not edit by hand."},
          {"type", "object"},
          {"required", {"cases"}},
          {"additionalProperties", false},
          {"properties",
           {{"$schema", {{"type", "string"}}},
            {"description", {{"type", "string"}}},
            {"cases", {{"type", "array"}, {"items", {{"$ref", "#/$defs/case"}}}}}}},
          {"$defs", {{"case", case_schema}}}};
}

json report_schema() {
  json per_proof = json::array();
  for (const auto* proof : all_proofs()) {
    json properties = json::object(), required = json::array();
    for (const auto& metric : proof->metrics) {
      properties[metric.name] = metric_schema(metric);
      if (metric.always) required.push_back(metric.name);
    }
    const json metrics = {{"type", "object"}, {"properties", properties}, {"additionalProperties", false}};
    const json checked_metrics = {{"type", "object"}, {"properties", properties}, {"required", required}};
    per_proof.push_back(when_proof(
        proof->id,
        {{"properties", {{"params", params_object(*proof, true)}, {"metrics", metrics}}},
         // every metric the proof always reports, unless the case errored
         {"if", {{"properties", {{"status", {{"enum", {"pass", "fail"}}}}}}}},
         {"then", {{"properties", {{"metrics", checked_metrics}}}}}}));
  }
  const json case_schema = {
      {"type", "object"},
      {"required", {"name", "proof", "params", "status", "verdict", "metrics", "tolerance", "seconds", "message"}},
      {"properties",
       {{"name", {{"type", "string"}, {"minLength", 1}}},
        {"proof", {{"enum", proof_ids()}}},
        {"file", {{"type", "string"}}},
        {"params", {{"type", "object"}}},
        {"expect", {{"enum", {to_string(Expect::hold), to_string(Expect::fail)}}}},
        {"sweep_group", {{"type", "string"}}},
        {"sweep_point", {{"type", "object"}}},
        {"weights", {{"type", "object"}, {"additionalProperties", tensor_source_schema()}}},
        {"weights_file", {{"type", "string"}}},
        {"weights_prefix", {{"type", "string"}}},
        {"weights_drawn", {{"type", "array"}, {"items", {{"type", "string"}}},
                           {"description", "with weights_partial: the module tensors drawn from the seed"}}},
        {"batch", {{"type", "integer"}, {"minimum", 1}, {"description", "samples of a batch input, each checked"}}},
        {"provenance",
         {{"type", "object"},
          {"description", "tensor name -> {file, bytes, sha256} of the .npy loaded (an .npz: of the archive, with "
                          "entry and entry_sha256), or {drawn_from_seed}"},
          {"additionalProperties",
           {{"type", "object"},
            {"properties",
             {{"file", {{"type", "string"}}},
              {"bytes", {{"type", "integer"}, {"minimum", 0}}},
              {"sha256", {{"type", "string"}, {"pattern", "^[0-9a-f]{64}$"}}},
              {"entry", {{"type", "string"}}},
              {"entry_sha256", {{"type", "string"}, {"pattern", "^[0-9a-f]{64}$"}}},
              {"drawn_from_seed", {{"type", "integer"}}}}}}}}},
        {"status", {{"enum", {to_string(Status::pass), to_string(Status::fail), to_string(Status::error)}}}},
        {"verdict", {{"enum", verdict_words()},
                     {"description", "holds: within the tolerance (without one, to round-off); bound holds: within "
                                     "the proof's bound, above round-off; fails; fails as predicted (the converse, "
                                     "its predicted failure measured); error: no verdict"}}},
        {"metrics", {{"type", "object"}}},
        // null: a limit that is not finite (NaN or Inf, e.g. a bound that overflowed); such a case is an error
        {"tolerance", {{"type", "object"}, {"additionalProperties", {{"type", {"number", "null"}}, {"minimum", 0}}}}},
        {"seconds", {{"type", "number"}, {"minimum", 0}}},
        {"peak_memory", {{"type", "number"}, {"minimum", 0},
                         {"description", "bytes the case's process added at its peak: its peak resident set less the "
                                         "run's resident set when it was forked (varies from run to run, like seconds)"}}},
        {"memory_estimate", {{"type", "number"}, {"minimum", 0},
                             {"description", "bytes the case was estimated to need before it ran (attnconv list, "
                                             "--max-memory)"}}},
        {"message", {{"type", "string"}}}}},
      {"allOf", per_proof}};
  const json count = non_negative_int();
  json verdict_counts = {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false},
                        {"description", "cases per verdict"}};
  for (const std::string& name : verdict_words()) verdict_counts["properties"][name] = count;
  return {
      {"$schema", dialect},
      {"$id", "https://attnconv.invalid/reports/schema.json"},
      {"title", "attnconv report"},
      {"description", "Generated by `attnconv schema report` from the proof registry; do not edit by hand."},
      {"type", "object"},
      {"required", {"schema_version", "tool", "environment", "summary", "cases"}},
      {"properties",
       {{"schema_version", {{"const", report_schema_version}}},
        {"tool",
         {{"type", "object"},
          {"required", {"name", "version", "git_commit"}},
          {"properties", {{"name", {{"const", "attnconv"}}}, {"version", {{"type", "string"}}}, {"git_commit", {{"type", "string"}}}}}}},
        {"environment",
         {{"type", "object"},
          {"required", {"compiler", "blas", "host", "start_time"}},
          {"properties",
           {{"compiler", {{"type", "string"}}},
            {"blas", {{"type", "string"}}},
            {"blas_threads", {{"type", "integer"}}},
            {"allocator", {{"type", "string"}}},
            {"host", {{"type", "string"}}},
            {"start_time", {{"type", "string"}, {"pattern", "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"}}}}}}},
        {"summary",
         {{"type", "object"},
          {"required", {"total", "passed", "failed", "errored", "seconds"}},
          {"properties",
           {{"total", count}, {"passed", count}, {"failed", count}, {"errored", count},
            {"verdicts", verdict_counts},
            {"seconds", {{"type", "number"}, {"minimum", 0}}}}}}},
        {"shard",
         {{"type", "object"},
          {"description", "present in a report of `run --shard I/N`"},
          {"required", {"index", "count", "total_cases", "cases_digest", "all_cases"}},
          {"properties",
           {{"index", {{"type", "integer"}, {"minimum", 1}, {"maximum", 2147483647}}},
            {"count", {{"type", "integer"}, {"minimum", 1}, {"maximum", 2147483647}}},
            {"total_cases", count},
            {"cases_digest", {{"type", "string"}, {"pattern", "^[0-9a-f]{16}$"}}},
            {"all_cases", {{"type", "array"}, {"items", {{"type", "string"}}}}}}}}},
        {"merged_from",
         {{"type", "array"},
          {"description", "present in a report of `attnconv merge`: the shard reports it joined"},
          {"items", {{"type", "object"}, {"required", {"file", "shard"}}}}}},
        {"cases", {{"type", "array"}, {"items", {{"$ref", "#/$defs/case"}}}}}}},
      {"$defs", {{"case", case_schema}}}};
}

}  // namespace attnconv
