#include <catch2/catch.hpp>

#include "harness/errors.hpp"
#include "harness/merge.hpp"
#include "harness/shard.hpp"

using namespace attnconv;

namespace {
Case make_case(const std::string& name) {
  Case c;
  c.name = c.base_name = name;
  c.proof = "p";
  return c;
}
}  // namespace

namespace {

const std::vector<std::string> all_names{"a", "b", "c", "d", "e"};

json shard_report(int index, int count, std::vector<std::string> names, const std::string& version = "0.1.0") {
  std::vector<Case> all;
  for (const auto& n : all_names) all.push_back(make_case(n));
  json report = {{"schema_version", 1},
                 {"tool", {{"name", "attnconv"}, {"version", version}, {"git_commit", "abc"}}},
                 {"environment", {{"host", "node" + std::to_string(index)}, {"start_time", "t"}}},
                 {"summary", {{"seconds", 1.5}}},
                 {"shard", shard_record({index, count}, all)},
                 {"cases", json::array()}};
  for (const auto& n : names) report["cases"].push_back({{"name", n}, {"status", n == "d" ? "fail" : "pass"}});
  return report;
}

}  // namespace

TEST_CASE("merge joins shards in the unsharded order and recounts", "[merge]") {
  const json merged = merge_reports({{"s2.json", shard_report(2, 2, {"b", "d"})},
                                     {"s1.json", shard_report(1, 2, {"a", "c", "e"})}});
  std::vector<std::string> names;
  for (const auto& c : merged["cases"]) names.push_back(c["name"]);
  CHECK(names == all_names);
  CHECK(merged["summary"]["total"] == 5);
  CHECK(merged["summary"]["failed"] == 1);
  CHECK(merged["summary"]["seconds"].get<double>() == 3.0);
  CHECK(merged["merged_from"].size() == 2);
  CHECK_FALSE(merged.contains("shard"));
}

TEST_CASE("merge refuses overlaps, gaps, mixed versions and foreign reports", "[merge]") {
  const auto refuses = [](std::vector<ShardReport> shards, const std::string& words) {
    try {
      merge_reports(shards);
      FAIL("merged although: " << words);
    } catch (const InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains(words));
    }
  };
  const json one = shard_report(1, 2, {"a", "c", "e"}), two = shard_report(2, 2, {"b", "d"});
  refuses({{"s1", one}, {"s1b", one}, {"s2", two}}, "overlapping shards");
  refuses({{"s1", one}}, "missing shard(s) 2/2");
  refuses({{"s1", one}, {"s2", shard_report(2, 2, {"b"})}}, "missing case(s) d");
  refuses({{"s1", one}, {"s2", shard_report(2, 2, {"b", "d", "a"})}}, "overlapping cases");
  refuses({{"s1", one}, {"s2", shard_report(2, 2, {"b", "d"}, "0.2.0")}}, "same build");
  refuses({{"s1", one}, {"s3", shard_report(2, 3, {"b", "d"})}}, "shard count");
  json foreign = two;
  foreign.erase("shard");
  refuses({{"s1", one}, {"plain.json", foreign}}, "not a shard report");
  json other_list = two;
  other_list["shard"]["all_cases"].push_back("f");
  other_list["shard"]["cases_digest"] = "0000000000000000";
  refuses({{"s1", one}, {"s2", other_list}}, "different case list");
  refuses({}, "no report");
}
