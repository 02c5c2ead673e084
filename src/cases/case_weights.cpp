#include "cases/case_weights.hpp"

#include <limits.h>

#include <algorithm>
#include <map>
#include <set>

#include "io/errors.hpp"
#include "io/npz.hpp"
#include "proof/npz_source.hpp"
#include "proof/params.hpp"
#include "io/quote.hpp"
#include "io/sizes.hpp"

namespace attnconv {

namespace {

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

std::string quoted_list(const std::vector<std::string>& words, std::size_t most = 20) {
  std::string list;
  for (std::size_t k = 0; k < words.size() && k < most; ++k) list += (k ? ", " : "") + std::string("'") + clip(words[k]) + "'";
  if (words.size() > most) list += ", ... (" + std::to_string(words.size() - most) + " more)";
  return list.empty() ? "none" : list;
}

std::string joined(const std::vector<std::string>& words) {
  std::string list;
  for (const auto& word : words) list += (list.empty() ? "" : ", ") + word;
  return list.empty() ? "none" : list;
}

// The (at most) three names of `names` nearest to `word` by edit distance.
std::vector<std::string> nearest(const std::string& word, const std::vector<std::string>& names) {
  std::vector<std::pair<std::size_t, std::string>> ranked;
  for (const auto& name : names) ranked.emplace_back(edit_distance(clip(word, 300), clip(name, 300)), name);
  const std::size_t n = std::min<std::size_t>(3, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + std::ptrdiff_t(n), ranked.end());
  std::vector<std::string> out;
  for (std::size_t k = 0; k < n; ++k) out.push_back(ranked[k].second);
  return out;
}

// The module prefixes of a state_dict's names: each up to its last '.', in order.
std::vector<std::string> prefixes(const std::vector<std::string>& names) {
  std::set<std::string> found;
  for (const auto& name : names) {
    const auto dot = name.rfind('.');
    found.insert(dot == std::string::npos ? "" : name.substr(0, dot + 1));
  }
  return {found.begin(), found.end()};
}

std::string tensor_of_entry(const std::string& rest) {
  return rest == "weight" ? "conv_weight" : rest == "bias" ? "conv_bias" : rest;
}

std::string shape_in_batch(std::size_t batch, const std::vector<std::size_t>& shape) {
  std::vector<std::size_t> batched{batch};
  batched.insert(batched.end(), shape.begin(), shape.end());
  return shape_string(batched);
}

}  // namespace

std::string state_dict_name(const std::string& tensor) {
  return tensor == "conv_weight" ? "weight" : tensor == "conv_bias" ? "bias" : tensor;
}

void read_weights_keys(const json& object, Case& c, const std::string& where) {
  const auto fail = [&](const std::string& key, const std::string& message) {
    throw InputError(where + "key '" + clip(key) + "': " + message);
  };
  const auto check_path = [&](const std::string& key, const std::string& path) {
    if (path.size() >= PATH_MAX)
      fail(key, "a path is at most " + std::to_string(PATH_MAX - 1) + " bytes, got " + quote(json(path)));
  };
  const json weights = object.value("weights", json::object());
  if (weights.is_string()) {
    const std::string path = weights.get<std::string>();
    check_path("weights", path);
    if (!ends_with(path, ".npz"))
      fail("weights", "a string names an .npz file (numpy.savez of a state_dict), got " + quote(weights) +
                          "; .npy files are named one per tensor: {\"input\": \"x.npy\", ...}");
    c.weights_file = path;
    c.weights = json::object();
  } else if (weights.is_object()) {
    for (const auto& [key, value] : weights.items()) {
      const std::string field = "weights." + key;
      if (value.is_string()) {
        check_path(field, value.get<std::string>());
        if (ends_with(value.get<std::string>(), ".npz"))
          fail(field, "an .npz holds many tensors: name one with {\"file\": " + quote(value) +
                          ", \"entry\": \"<name>\"}, or read a state_dict with \"weights\": " + quote(value));
      } else if (value.is_object()) {
        for (const auto& [k, v] : value.items())
          if (k != "file" && k != "entry") fail(field + "." + k, "unknown key (an .npz entry is {\"file\", \"entry\"})");
        if (!value.contains("file") || !value["file"].is_string() || !ends_with(value["file"].get<std::string>(), ".npz"))
          fail(field + ".file", "must be the path (string) of an .npz file, got " + quote(value.value("file", json())));
        if (!value.contains("entry") || !value["entry"].is_string())
          fail(field + ".entry", "must be the name (string) of an entry of the .npz, got " + quote(value.value("entry", json())));
        check_path(field + ".file", value["file"].get<std::string>());
      } else {
        fail(field, "must be a path (string) to a .npy file or {\"file\": <.npz>, \"entry\": <name>}, got " + quote(value));
      }
    }
    c.weights = weights;
  } else {
    fail("weights", "must be the path of an .npz file or an object of tensor name -> .npy path, got " + quote(weights));
  }
  if (object.contains("weights_prefix")) {
    if (!object["weights_prefix"].is_string()) fail("weights_prefix", "must be a string, got " + quote(object["weights_prefix"]));
    if (c.weights_file.empty()) fail("weights_prefix", "needs \"weights\": \"<file>.npz\" (a state_dict to read under the prefix)");
    c.weights_prefix = object["weights_prefix"].get<std::string>();
  }
  if (object.contains("weights_partial")) {
    if (!object["weights_partial"].is_boolean()) fail("weights_partial", "must be true or false, got " + quote(object["weights_partial"]));
    c.weights_partial = object["weights_partial"].get<bool>();
  }
}

void resolve_weights(Case& c, WeightsMemo& memo) {
  if (c.weights_file.empty()) return;
  const std::string path = source_path(c.file, {c.weights_file, ""});
  auto found = memo.npz_names.find(path);
  if (found == memo.npz_names.end()) {
    try {
      found = memo.npz_names.emplace(path, npz_names(read_npz_directory(path))).first;
    } catch (const std::runtime_error& e) {
      throw InputError(c.file + ": case '" + clip(c.name) + "': key 'weights': " + clip(path, PATH_MAX) + " " + e.what());
    }
  }
  json resolved = json::object();
  std::map<std::string, std::string> entry_of;  // tensor -> the entry it is read from
  const auto take = [&](const std::string& tensor, const std::string& name) {
    // Two entries naming one tensor (`m.weight` and `m.conv_weight`): which one the layer has is not ours to guess.
    if (const auto [at, fresh] = entry_of.emplace(tensor, name); !fresh)
      throw InputError(c.file + ": case '" + clip(c.name) + "': key 'weights': " + clip(path, PATH_MAX) + " entries '" +
                       clip(at->second) + "' and '" + clip(name) + "' both name the tensor " + tensor +
                       ": keep one of them in the archive");
    resolved[tensor] = to_json({c.weights_file, name});
  };
  for (const auto& name : found->second) {
    if (is_data_tensor(name)) {
      take(name, name);
    } else if (name.compare(0, c.weights_prefix.size(), c.weights_prefix) == 0) {
      const std::string tensor = tensor_of_entry(name.substr(c.weights_prefix.size()));
      if (!is_data_tensor(tensor)) take(tensor, name);
    }
  }
  c.weights = resolved;
}

void check_weights(Case& c, const ProofDef& proof, WeightsMemo& memo) {
  const auto where = [&](const std::string& key) { return c.file + ": case '" + clip(c.name) + "': key '" + clip(key) + "': "; };
  TensorShapes expected;
  if (proof.expected_tensors) expected = proof.expected_tensors(c);
  std::vector<std::string> names;
  for (const auto& [name, shape] : expected) names.push_back(name);
  const std::string npz_path = c.weights_file.empty() ? "" : source_path(c.file, {c.weights_file, ""});

  // The .npz form: entries under the prefix that the proof does not load are
  // the state_dict's other tensors.
  if (!c.weights_file.empty() && proof.expected_tensors) {
    json kept = json::object();
    for (const auto& [key, value] : c.weights.items())
      if (expected.count(key))
        kept[key] = value;
      else if (key == "reference_output")
        throw InputError(where("weights") + clip(npz_path, PATH_MAX) + " holds a reference_output, but proof " + c.proof +
                         " compares no reference output");
      else if (key == "conv_bias" && expected.count("conv_weight"))
        // The convolution's bias is in the file, but the case says it has none: dropping it would check another layer.
        throw InputError(where("params.bias") + clip(npz_path, PATH_MAX) + " holds the layer's bias " +
                         quote(c.weights_prefix + "bias") + ", but the case has \"bias\": false; set \"bias\": true");
    c.weights = kept;
  }

  // A module loaded in part: the others would be drawn from the seed, silently.
  if (proof.expected_tensors) {
    std::vector<std::string> loaded, missing;
    for (const auto& name : names)
      if (!is_data_tensor(name)) (c.weights.contains(name) ? loaded : missing).push_back(name);
    const bool none_under_prefix = !c.weights_file.empty() && loaded.empty() && !missing.empty();
    if (none_under_prefix || (!loaded.empty() && !missing.empty() && !c.weights_partial)) {
      std::string message;
      if (!c.weights_file.empty()) {
        const std::vector<std::string>& in_file = memo.npz_names.at(npz_path);
        std::string lacking;
        for (const auto& name : missing) {
          const std::string entry = c.weights_prefix + state_dict_name(name);
          lacking += (lacking.empty() ? "" : "; ") + std::string("'") + clip(entry) + "' (" + name + "), nearest: " +
                     quoted_list(nearest(entry, in_file));
        }
        message = clip(npz_path, PATH_MAX) + " has no entry " + lacking + "; prefixes in the file: " +
                  quoted_list(prefixes(in_file)) + " (" + std::to_string(in_file.size()) + " entries)";
        if (none_under_prefix)
          throw InputError(where(c.weights_prefix.empty() ? "weights" : "weights_prefix") + "none of the tensors of " +
                           c.proof + " is under the prefix '" + clip(c.weights_prefix) + "': " + message);
      } else {
        message = "loads " + joined(loaded) + " but not " + joined(missing);
      }
      const bool bias_only = missing.size() == 1 && missing[0] == "conv_bias";
      throw InputError(where("weights") + message + ": the module is loaded in part; name every tensor of it, or set " +
                       "\"weights_partial\": true to draw the others from the seed" +
                       (bias_only ? " (a layer without bias: \"bias\": false)" : ""));
    }
  }

  for (const auto& [metric, limit] : c.request.tolerance.items())
    if (metric.rfind("reference_", 0) == 0 && !c.weights.contains("reference_output"))
      throw InputError(where("tolerance." + metric) + "the case gives no reference_output to compare with");
  for (const auto& name : names)
    if (!c.weights.contains(name) && name != "reference_output" && c.params.contains("seed"))
      c.provenance[name] = {{"drawn_from_seed", c.params["seed"]}};
  if (c.weights.empty()) return;

  const std::string dtype = c.params.value("dtype", std::string("float64"));
  const std::string descr = dtype == "float32" ? "<f4" : "<f8";
  // input first: its batch decides reference_output's shape.
  std::vector<std::string> keys;
  if (c.weights.contains("input")) keys.push_back("input");
  for (const auto& [key, value] : c.weights.items())
    if (key != "input") keys.push_back(key);
  std::uint64_t read_bytes = 0;
  for (const std::string& key : keys) {
    const json& value = c.weights[key];
    if (proof.expected_tensors && !expected.count(key)) {
      const std::string best = closest(key, names);
      throw InputError(where("weights." + key) + "proof " + c.proof + " loads no tensor named '" + clip(key) + "'" +
                       (best.empty() ? "" : " (did you mean '" + best + "'?)") + "; with these parameters it loads: " +
                       joined(names));
    }
    const TensorSource source = tensor_source(value);
    std::optional<std::vector<std::size_t>> shape;
    if (proof.expected_tensors) shape = expected.at(key);
    // A data tensor may carry a batch dimension: its shape is compared here.
    const bool data = is_data_tensor(key) && shape;
    const std::string memo_key = source_path(c.file, source) + "|" + source.entry + "|" + descr + "|" +
                                 (shape && !data ? shape_string(*shape) : "?");
    auto it = memo.checks.find(memo_key);
    const double max_memory = memo.max_memory > 0 ? memo.max_memory : default_max_memory();
    const bool capped = max_memory >= double(npz_max_entry_bytes);  // the reader's own cap, whatever --max-memory allows
    const std::string limit_name = capped ? "the 2 GiB an .npz entry may take" : "--max-memory " + format_bytes(max_memory);
    if (it == memo.checks.end())
      it = memo.checks
               .emplace(memo_key, check_tensor_source_within(c.file, source, descr, data ? std::nullopt : shape,
                                                             std::uint64_t(std::min(max_memory, double(npz_max_entry_bytes))),
                                                             limit_name, memo.read_bytes[memo_key]))
               .first;
    std::string problem = it->second.problem;
    // What the case's .npz entries take to read, together, against the same budget.
    read_bytes += memo.read_bytes[memo_key];
    if (problem.empty() && double(read_bytes) > max_memory)
      problem = "the .npz entries of this case take " + format_bytes(double(read_bytes)) + " to read (inflated), more than " +
                ("--max-memory " + format_bytes(max_memory)) + " allows";
    const std::string shown = clip(source_path(c.file, source), PATH_MAX) +
                              (source.entry.empty() ? "" : " entry '" + clip(source.entry) + "'");
    if (problem.empty() && data) {
      const std::vector<std::size_t>& got = it->second.shape;
      const bool plain = got == *shape;
      const bool batched = got.size() == shape->size() + 1 && std::equal(shape->begin(), shape->end(), got.begin() + 1);
      if (key == "input") {
        if (batched && got[0] == 0) problem = shown + " has shape " + shape_string(got) + ": a batch of no samples";
        else if (batched) c.batch = got[0];
        else if (!plain)
          problem = shown + " has shape " + shape_string(got) + ", expected " + shape_string(*shape) + " or a batch (N, " +
                    shape_string(*shape).substr(1);
      } else if (c.batch ? !(batched && got[0] == c.batch) : !plain) {
        problem = shown + " has shape " + shape_string(got) + ", expected " +
                  (c.batch ? shape_in_batch(c.batch, *shape) + " (one output per sample of the input's batch)"
                           : shape_string(*shape) + (batched ? " (the input has no batch dimension)" : ""));
      }
    }
    if (!problem.empty())
      throw InputError(where("weights." + key) + problem +
                       (problem.find("dtype") != std::string::npos ? " (the case's dtype is " + dtype + ")" : ""));
    json provenance = {{"file", source.file}};
    if (source.entry.empty()) {
      provenance["bytes"] = it->second.digest.bytes;
      provenance["sha256"] = it->second.digest.sha256;
    } else {
      FileDigest digest;
      try {
        digest = cached_file_digest(source_path(c.file, source));
      } catch (const std::runtime_error& e) {
        throw InputError(where("weights." + key) + e.what());
      }
      provenance["entry"] = source.entry;
      provenance["bytes"] = digest.bytes;
      provenance["sha256"] = digest.sha256;
      provenance["entry_sha256"] = it->second.entry_sha256;
    }
    c.provenance[key] = provenance;
  }
}

}  // namespace attnconv
