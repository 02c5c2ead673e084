#include "cases/case_loader.hpp"

#include <limits.h>

#include <algorithm>
#include <map>
#include <cmath>
#include <filesystem>
#include <set>

#include "io/bounded_file.hpp"
#include "cases/case_weights.hpp"
#include "cases/load_within.hpp"
#include "cases/name_filter.hpp"
#include "io/errors.hpp"
#include "io/json_reader.hpp"
#include "io/quote.hpp"
#include "io/sizes.hpp"

namespace attnconv {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> case_keys{"name",    "proof",          "params",          "sweep",      "tolerance",
                                         "expect",  "weights",        "weights_prefix",  "weights_partial",
                                         "description"};

// A case name is a label and a folder name, not a document (the schema's maxLength).
constexpr std::size_t max_name_characters = 1024;

std::string suggestion(const std::string& word, const std::vector<std::string>& known) {
  const std::string best = closest(word, known);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::vector<std::string> param_names(const ProofDef& proof) {
  std::vector<std::string> names;
  for (const auto& spec : proof.params) names.push_back(spec.name);
  return names;
}

const ParamSpec* find_spec(const ProofDef& proof, const std::string& name) {
  for (const auto& spec : proof.params)
    if (spec.name == name) return &spec;
  return nullptr;
}

std::string join(const std::vector<std::string>& words) {
  std::string list;
  for (const auto& word : words) list += (list.empty() ? "" : ", ") + word;
  return list.empty() ? "none" : list;
}

std::string known_proofs() {
  std::vector<std::string> ids;
  for (const auto* p : all_proofs()) ids.push_back(p->id);
  return join(ids);
}

// More expanded cases than this in one run (over all its files) is a typo,
// not a plan; counted before any case is expanded.
constexpr std::size_t max_expanded_cases = 100000;

// The number of cases `object` expands to (the product of the lengths of its
// sweep lists), saturating at max_expanded_cases + 1 so that it cannot
// overflow; a malformed sweep counts 1 (expand_case reports it).
std::size_t expanded_count(const json& object) {
  if (!object.is_object() || !object.contains("sweep") || !object["sweep"].is_object()) return 1;
  constexpr std::size_t over = max_expanded_cases + 1;
  std::size_t count = 1;
  for (const auto& [key, values] : object["sweep"].items()) {
    const std::size_t n = values.is_array() ? std::max<std::size_t>(values.size(), 1) : 1;
    count = count > over / n ? over : std::min(count * n, over);
  }
  return count;
}

// Adds the cases of `object` to the run's count; refuses a run over the cap.
void count_cases(const json& object, const std::string& file, std::size_t index, std::size_t& run_total) {
  run_total = std::min(run_total + expanded_count(object), max_expanded_cases + 1);
  if (run_total <= max_expanded_cases) return;
  const std::string label = object.is_object() && object.contains("name") && object["name"].is_string()
                                ? "case '" + clip(object["name"].get<std::string>()) + "'"
                                : "case #" + std::to_string(index + 1);
  throw InputError(file + ": " + label + ": key 'sweep': the run expands to more than " +
                   std::to_string(max_expanded_cases) + " cases (over all its case files); split it into several runs");
}

// The parameters a case file gives for one point of its sweep (not the defaults).
json given_params(const json& params, const json& point) {
  json given = params;
  for (const auto& [key, value] : point.items()) given[key] = value;
  return given;
}

// The parameters the loaded tensors determine (ProofDef::loaded_params) replace
// the defaults in c.params; a case file that gives another value contradicts
// its own tensors.
// Equal, numbers compared as the case's dtype holds them (a float32 rate1 of 0.3 is 0.30000001192...).
bool same_value(const json& given, const json& loaded, bool float32) {
  if (given.is_array() && loaded.is_array())
    return given.size() == loaded.size() && std::equal(given.begin(), given.end(), loaded.begin(), [&](const json& a, const json& b) {
             return same_value(a, b, float32);
           });
  if (given.is_number() && loaded.is_number())
    return float32 ? float(given.get<double>()) == float(loaded.get<double>()) : given.get<double>() == loaded.get<double>();
  return given == loaded;
}

// Whether a loaded tensor changed a parameter (then the case is prepared again).
bool apply_loaded_params(Case& c, const ProofDef& proof, const json& given) {
  if (!proof.loaded_params) return false;
  const bool float32 = c.params.value("dtype", std::string("float64")) == "float32";
  const json loaded = proof.loaded_params(c);
  bool changed = false;
  for (const auto& [key, value] : loaded.items()) {
    if (given.contains(key) && !same_value(given[key], value, float32))
      throw InputError(c.file + ": case '" + clip(c.name) + "': key 'params." + key + "': " + quote(given[key]) +
                       " contradicts the loaded tensors, which give " + quote(value) +
                       "; leave it out (the report gives the loaded value)");
    changed = changed || c.params[key] != value;
    c.params[key] = value;
  }
  return changed;
}

// For a retired parameter given another value than its one: what it was.
std::string retired_words(const ProofDef& proof, const std::string& key) {
  for (const auto& [name, value] : proof.retired)
    if (name == key) return "no longer a parameter (it could only be " + value.dump() + "); ";
  return "";
}

// The value of a swept parameter as it appears in a case name.
std::string sweep_label(const json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

}  // namespace

namespace {

WeightsMemo memo_within(double max_memory) {
  WeightsMemo memo;
  memo.max_memory = max_memory > 0 ? max_memory : default_max_memory();
  return memo;
}

// A case expanded from its object, its tensors not yet checked, and the
// parameters its file gives at its sweep point (which the loaded tensors must
// not contradict).
struct Expanded {
  Case c;
  json given;
};

// Runs `step` on c, naming the case and the key in a ParamError's message.
template <class Step> void naming_case(const Case& c, Step&& step) {
  try {
    step();
  } catch (const ParamError& e) {
    throw InputError(c.file + ": case '" + clip(c.name) + "': key 'params." + e.key + "': " + e.what());
  }
}

// Checks the tensors of e (check_weights) and takes the parameters they give.
// `memo` holds the checks of the tensors met so far in this load: a file that
// several cases read (a layer's Theorem 1 and decomposition cases) is checked
// once.
Case checked(Expanded e, WeightsMemo& memo) {
  naming_case(e.c, [&] {
    const ProofDef& proof = *find_proof(e.c.proof);
    check_weights(e.c, proof, memo);
    if (apply_loaded_params(e.c, proof, e.given)) prepare_case(e.c);
  });
  return std::move(e.c);
}

std::vector<Case> all_checked(std::vector<Expanded> expanded, WeightsMemo& memo) {
  std::vector<Case> cases;
  for (auto& e : expanded) cases.push_back(checked(std::move(e), memo));
  return cases;
}

// The cases of one object, every key checked but the tensors' data (an .npz
// form's entries are listed from its directory).
std::vector<Expanded> expand_case_within(const json& object, const std::string& file, std::size_t index, WeightsMemo& memo) {
  std::string label = "case #" + std::to_string(index + 1);
  if (object.is_object() && object.contains("name") && object["name"].is_string())
    label = "case '" + clip(object["name"].get<std::string>()) + "'";
  const auto fail = [&](const std::string& key, const std::string& message) -> void {
    throw InputError(file + ": " + label + ": key '" + clip(key) + "': " + message);
  };
  if (!object.is_object()) throw InputError(file + ": " + label + ": a case must be a JSON object, got " + quote(object));

  for (const auto& [key, value] : object.items())
    if (std::find(case_keys.begin(), case_keys.end(), key) == case_keys.end())
      fail(key, "unknown key" + suggestion(key, case_keys));

  Case c;
  c.file = file;
  if (!object.contains("name")) fail("name", "missing");
  if (!object["name"].is_string() || object["name"].get<std::string>().empty()) fail("name", "must be a non-empty string");
  c.base_name = object["name"].get<std::string>();
  if (c.base_name.find_first_of(std::string("/\\\0", 3)) != std::string::npos)
    fail("name", "must not contain '/', '\\' or a NUL character (it names a dump folder)");
  if (c.base_name == "." || c.base_name == "..") fail("name", "must not be '.' or '..' (it names a dump folder)");
  if (const auto characters = std::count_if(c.base_name.begin(), c.base_name.end(),
                                            [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; });
      std::size_t(characters) > max_name_characters)
    fail("name", "at most " + std::to_string(max_name_characters) + " characters, got " + std::to_string(characters));
  if (object.contains("description") && !object["description"].is_string())
    fail("description", "must be a string, got " + quote(object["description"]));

  if (!object.contains("proof")) fail("proof", "missing");
  if (!object["proof"].is_string()) fail("proof", "must be a string");
  c.proof = object["proof"].get<std::string>();
  const ProofDef* proof = find_proof(c.proof);
  if (!proof) {
    std::vector<std::string> ids;
    for (const auto* p : all_proofs()) ids.push_back(p->id);
    fail("proof", "unknown proof '" + clip(c.proof) + "'" + suggestion(c.proof, ids) + "; known proofs: " + known_proofs());
  }

  if (object.contains("params") && !object["params"].is_object()) fail("params", "must be an object");
  const json params = without_retired(*proof, object.value("params", json::object()));
  for (const auto& [key, value] : params.items()) {
    const ParamSpec* spec = find_spec(*proof, key);
    if (!spec) fail("params." + key, retired_words(*proof, key) + "unknown parameter of " + c.proof + suggestion(key, param_names(*proof)));
    if (auto error = check_param(*spec, value); !error.empty()) fail("params." + key, error);
  }
  c.params = json::object();
  for (const auto& spec : proof->params) {
    if (params.contains(spec.name))
      c.params[spec.name] = params[spec.name];
    else if (spec.default_value.is_null())
      fail("params." + spec.name, "missing (required by " + c.proof + ")");
    else
      c.params[spec.name] = spec.default_value;
  }

  c.request.tolerance = object.value("tolerance", json::object());
  if (!c.request.tolerance.is_object()) fail("tolerance", "must be an object of metric -> number");
  const std::vector<std::string> error_metrics = error_metric_names(*proof);
  for (const auto& [key, value] : c.request.tolerance.items()) {
    if (std::find(error_metrics.begin(), error_metrics.end(), key) == error_metrics.end()) {
      const std::string& name = key;  // clang 14 cannot capture a structured binding
      const bool reported = std::any_of(proof->metrics.begin(), proof->metrics.end(), [&](const Metric& m) { return m.name == name; });
      fail("tolerance." + key, (reported ? "'" + key + "' is not an error metric of " + c.proof
                                         : "proof " + c.proof + " reports no metric '" + clip(key) + "'" + suggestion(key, error_metrics)) +
                                   "; a tolerance may name only its error metrics: " + join(error_metrics));
    }
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0)
      fail("tolerance." + key, "must be a finite number >= 0, got " + quote(value));
  }

  const json expect = object.value("expect", json("hold"));
  const std::optional<Expect> expected = expect.is_string() ? expect_from_string(expect.get<std::string>()) : std::nullopt;
  if (!expected) fail("expect", "must be \"hold\" or \"fail\", got " + quote(expect));
  c.request.expect = *expected;

  read_weights_keys(object, c, file + ": " + label + ": ");

  // Sweep: one case per point of the cartesian product, first key slowest.
  const json sweep = object.value("sweep", json::object());
  if (!sweep.is_object()) fail("sweep", "must be an object of parameter -> list of values");
  std::size_t this_object_only = 0;
  count_cases(object, file, index, this_object_only);  // expand_case alone (the fuzzer) is capped too
  std::vector<json> points{json::object()};
  for (const auto& [key, values] : sweep.items()) {
    const ParamSpec* spec = find_spec(*proof, key);
    if (!spec) fail("sweep." + key, "unknown parameter of " + c.proof + suggestion(key, param_names(*proof)));
    if (!values.is_array() || values.empty()) fail("sweep." + key, "must be a non-empty list of values");
    for (const auto& v : values)
      if (auto error = check_param(*spec, v); !error.empty()) fail("sweep." + key, error);
    std::vector<json> next;
    for (const auto& point : points)
      for (const auto& v : values) {
        json p = point;
        p[key] = v;
        next.push_back(std::move(p));
      }
    points = std::move(next);
  }

  std::vector<Expanded> cases;
  for (const auto& point : points) {
    Case expanded = c;
    expanded.sweep_point = point;
    expanded.name = c.base_name;
    if (!point.empty()) {
      std::string suffix;
      for (const auto& [key, value] : point.items()) {
        expanded.params[key] = value;
        suffix += (suffix.empty() ? "" : ",") + key + "=" + sweep_label(value);
      }
      expanded.name += "[" + suffix + "]";
    }
    naming_case(expanded, [&] {
      resolve_weights(expanded, memo);
      prepare_case(expanded);
    });
    cases.push_back({std::move(expanded), given_params(params, point)});
  }
  return cases;
}

}  // namespace

std::vector<Case> expand_case(const json& object, const std::string& file, std::size_t index) {
  WeightsMemo memo = memo_within(0);
  return all_checked(expand_case_within(object, file, index, memo), memo);
}

namespace {

// The cases of one file; `run_total` counts the cases of the whole run.
std::vector<Expanded> load_text(const std::string& text, const std::string& path, std::size_t& run_total, WeightsMemo& memo) {
  const json document = parse_case_json(text, path);
  if (!document.is_object()) throw InputError(path + ": the top level must be a JSON object with \"cases\": [...]");
  for (const auto& [key, value] : document.items())
    if (key != "cases" && key != "description" && key != "$schema")
      throw InputError(path + ": key '" + clip(key) + "': unknown top-level key" +
                       suggestion(key, {"cases", "description", "$schema"}));
  if (!document.contains("cases") || !document["cases"].is_array())
    throw InputError(path + ": key 'cases': must be a list of cases");
  for (std::size_t k = 0; k < document["cases"].size(); ++k) count_cases(document["cases"][k], path, k, run_total);
  std::vector<Expanded> cases;
  std::set<std::string> names;
  for (std::size_t k = 0; k < document["cases"].size(); ++k)
    for (auto& e : expand_case_within(document["cases"][k], path, k, memo)) {
      if (!names.insert(e.c.name).second) throw InputError(path + ": case '" + clip(e.c.name) + "': key 'name': duplicate case name");
      cases.push_back(std::move(e));
    }
  return cases;
}

// A case file larger than this is not a hand-written list of cases (100 000
// cases of a few hundred bytes each fit).
constexpr std::uintmax_t max_case_file_bytes = std::uintmax_t(64) << 20;

std::vector<Expanded> load_file(const std::string& path, std::size_t& run_total, WeightsMemo& memo) {
  return load_text(read_bounded_file(path, max_case_file_bytes, "case file", "use sweeps, or split it"), path, run_total,
                   memo);
}

}  // namespace

std::vector<Case> load_case_file(const std::string& path) {
  std::size_t run_total = 0;
  WeightsMemo memo = memo_within(0);
  return all_checked(load_file(path, run_total, memo), memo);
}

std::vector<Case> load_case_text(const std::string& text, const std::string& path) {
  std::size_t run_total = 0;
  WeightsMemo memo = memo_within(0);
  return all_checked(load_text(text, path, run_total, memo), memo);
}

std::vector<Case> load_cases(const std::vector<std::string>& paths) { return load_selected_cases(paths, 0, {}).cases; }

SelectedCases load_selected_cases(const std::vector<std::string>& paths, double max_memory, const CaseSelection& selection) {
  std::vector<std::string> files;
  for (const auto& path : paths) {
    std::error_code error;
    const fs::file_status status = fs::status(path, error);
    if (error && error != std::errc::no_such_file_or_directory)  // a loop of symbolic links, a forbidden folder
      throw InputError(path + ": cannot read: " + error.message());
    if (fs::is_directory(status)) {
      std::vector<std::string> found;
      try {
        for (const auto& entry : fs::recursive_directory_iterator(path))
          if (entry.is_regular_file() && entry.path().extension() == ".json" && entry.path().filename() != "schema.json")
            found.push_back(entry.path().string());
      } catch (const fs::filesystem_error& e) {
        throw InputError(path + ": cannot read the folder: " + e.path1().string() + ": " + e.code().message());
      }
      if (found.empty()) throw InputError(path + ": a folder without case files (*.json other than schema.json)");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(status)) {
      files.push_back(path);
    } else {
      throw InputError(path + ": no such file or folder");
    }
  }
  std::vector<Expanded> expanded;
  std::set<std::string> names;
  std::set<fs::path> read;  // a file given twice (`run cases cases/a.json`) is read once
  std::size_t run_total = 0;
  WeightsMemo memo = memo_within(max_memory);
  for (const auto& file : files) {
    std::error_code error;
    if (!read.insert(fs::weakly_canonical(fs::absolute(file), error)).second) continue;
    for (auto& e : load_file(file, run_total, memo)) {
      if (!names.insert(e.c.name).second)
        throw InputError(file + ": case '" + clip(e.c.name) + "': key 'name': duplicate case name (also in another file)");
      expanded.push_back(std::move(e));
    }
  }
  // Chosen by name, then the chosen cases' tensors checked, in loader order.
  std::vector<Expanded> matching;
  SelectedCases selected;
  for (auto& e : expanded)
    if (selection.filter.empty() || name_matches(selection.filter, e.c.name)) {
      selected.matched.push_back(e.c.name);
      matching.push_back(std::move(e));
    }
  const std::vector<bool> kept =
      selection.shard ? in_shard(selected.matched, *selection.shard) : std::vector<bool>(matching.size(), true);
  // The .npz files' digests made on a second thread while the entries are checked here.
  std::vector<std::string> npz_files;
  std::set<std::string> listed;
  for (std::size_t k = 0; k < matching.size(); ++k) {
    if (!kept[k]) continue;
    for (const auto& [key, value] : matching[k].c.weights.items()) {
      const TensorSource source = tensor_source(value);  // a form read_weights_keys checked
      const std::string path = source_path(matching[k].c.file, source);
      if (!source.entry.empty() && listed.insert(path).second) npz_files.push_back(path);
    }
  }
  const DigestsAhead ahead(std::move(npz_files));
  for (std::size_t k = 0; k < matching.size(); ++k)
    if (kept[k]) selected.cases.push_back(checked(std::move(matching[k]), memo));
  return selected;
}

}  // namespace attnconv
