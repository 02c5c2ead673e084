#include "report/merge.hpp"

#include <map>
#include <set>

#include "io/errors.hpp"
#include "io/json_reader.hpp"
#include "io/quote.hpp"
#include "report/report.hpp"
#include "report/report_validation.hpp"
#include "cases/shard.hpp"
#include "report/sweep_fit.hpp"

namespace attnconv {

namespace {

std::string list_some(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t k = 0; k < names.size() && k < 5; ++k) text += (k ? ", " : "") + clip(names[k]);
  if (names.size() > 5) text += ", ... (" + std::to_string(names.size()) + " in all)";
  return text;
}

const json& shard_of(const ShardReport& s) {
  if (!s.report.is_object() || !s.report.contains("shard") || !s.report["shard"].is_object() ||
      !s.report.contains("cases") || !s.report["cases"].is_array())
    throw InputError(s.file + ": not a shard report (no \"shard\" record; write one with `attnconv run --shard I/N`)");
  return s.report["shard"];
}

}  // namespace

ShardReport read_report(const std::string& path) { return {path, read_validated_report(path)}; }

json merge_reports(const std::vector<ShardReport>& shards) {
  if (shards.empty()) throw InputError("merge: no report given");
  const ShardReport& first = shards.front();
  const json& first_shard = shard_of(first);
  const int count = first_shard.value("count", 0);
  const json all_cases = first_shard.value("all_cases", json::array());

  std::map<int, std::string> seen_index;
  for (const auto& s : shards) {
    const json& shard = shard_of(s);
    for (const char* key : {"version", "git_commit"})
      if (s.report["tool"].value(key, "") != first.report["tool"].value(key, ""))
        throw InputError(s.file + ": tool " + key + " " + clip(s.report["tool"].value(key, "?")) + " differs from " +
                         first.file + " (" + clip(first.report["tool"].value(key, "?")) +
                         "): shards must come from the same build");
    if (s.report.value("schema_version", -1) != first.report.value("schema_version", -1))
      throw InputError(s.file + ": schema_version differs from " + first.file);
    if (shard.value("count", 0) != count)
      throw InputError(s.file + ": shard count " + std::to_string(shard.value("count", 0)) + " differs from " +
                       first.file + " (" + std::to_string(count) + ")");
    {
      std::vector<std::string> names;
      for (const auto& name : shard.value("all_cases", json::array())) names.push_back(name.is_string() ? name.get<std::string>() : name.dump());
      if (shard.value("cases_digest", "") != case_list_digest(names))
        throw InputError(s.file + ": key 'shard.cases_digest': " + clip(shard.value("cases_digest", "?")) +
                         " is not the digest of its shard.all_cases (" + case_list_digest(names) +
                         "): the report was edited");
    }
    if (shard.value("cases_digest", "") != first_shard.value("cases_digest", "") || shard["all_cases"] != all_cases)
      throw InputError(s.file + ": a different case list than " + first.file + " (cases_digest " +
                       clip(shard.value("cases_digest", "?")) + " vs " + clip(first_shard.value("cases_digest", "?")) + ")");
    const int index = shard.value("index", 0);
    if (index < 1 || index > count)
      throw InputError(s.file + ": key 'shard.index': shard " + std::to_string(index) + " of " + std::to_string(count) +
                       " does not exist");
    if (const auto it = seen_index.find(index); it != seen_index.end())
      throw InputError(s.file + ": shard " + std::to_string(index) + "/" + std::to_string(count) + " is also in " +
                       it->second + " (overlapping shards)");
    seen_index[index] = s.file;
  }
  // The first five missing shards by name: the count comes from a file, so it bounds no allocation.
  std::vector<std::string> missing_shards;
  for (int index = 1; index <= count && missing_shards.size() < 5; ++index)
    if (!seen_index.count(index)) missing_shards.push_back(std::to_string(index) + "/" + std::to_string(count));
  if (const long long missing = count - static_cast<long long>(seen_index.size()); missing > 0) {
    std::string list;
    for (const auto& name : missing_shards) list += (list.empty() ? "" : ", ") + name;
    throw InputError("merge: missing shard(s) " + list + (missing > 5 ? ", ... (" + std::to_string(missing) + " in all)" : "") +
                     ": " + std::to_string(shards.size()) + " report(s) given for a run of " + std::to_string(count) +
                     " shards");
  }

  std::map<std::string, json> by_name;
  std::map<std::string, std::string> origin;
  const std::set<std::string> expected(all_cases.begin(), all_cases.end());
  json merged_from = json::array();
  double seconds = 0;
  for (const auto& s : shards) {
    for (const auto& c : s.report["cases"]) {
      const std::string name = c.value("name", "");
      if (!expected.count(name)) throw InputError(s.file + ": case '" + clip(name) + "' is not in the shards' case list");
      if (const auto it = origin.find(name); it != origin.end())
        throw InputError(s.file + ": case '" + clip(name) + "' is also in " + it->second + " (overlapping cases)");
      origin[name] = s.file;
      by_name[name] = c;
    }
    const json& summary = s.report.value("summary", json::object());
    seconds += summary.value("seconds", 0.0);
    merged_from.push_back({{"file", s.file},
                           {"shard", s.report["shard"]["index"]},
                           {"host", s.report.value("environment", json::object()).value("host", "")},
                           {"start_time", s.report.value("environment", json::object()).value("start_time", "")},
                           {"seconds", summary.value("seconds", 0.0)}});
  }
  std::vector<std::string> missing;
  for (const auto& name : all_cases)
    if (!by_name.count(name.get<std::string>())) missing.push_back(name.get<std::string>());
  if (!missing.empty()) throw InputError("merge: missing case(s) " + list_some(missing));

  const ShardReport& shard_one = shards[0];
  json merged = {{"schema_version", first.report["schema_version"]},
                 {"tool", first.report["tool"]},
                 {"environment", shard_one.report.value("environment", json::object())},
                 {"merged_from", merged_from},
                 {"cases", json::array()}};
  for (const auto& name : all_cases) merged["cases"].push_back(by_name.at(name.get<std::string>()));
  // What the unsharded run adds: the fits over whole sweeps (each shard fitted
  // only its part), and the run's settings (every shard's; resumed cases summed).
  merged["sweep_fits"] = fit_sweeps(merged["cases"]);
  if (first.report.contains("run")) {
    merged["run"] = first.report["run"];
    std::size_t resumed = 0;
    for (const auto& s : shards) resumed += s.report.value("run", json::object()).value("resumed_cases", std::size_t(0));
    if (merged["run"].contains("resumed_cases")) merged["run"]["resumed_cases"] = resumed;
  }
  update_summary(merged, seconds);
  return merged;
}

}  // namespace attnconv
