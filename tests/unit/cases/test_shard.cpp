// --shard I/N (cases/shard) and `attnconv merge` (report/merge), which
// joins the shards' reports back into the unsharded one.
#include <catch2/catch.hpp>
#include <set>

#include "io/errors.hpp"
#include "report/merge.hpp"
#include "cases/shard.hpp"

using namespace attnconv;

namespace {
// The names of `shard` (cases/shard.hpp's in_shard), in the given order.
std::vector<std::string> shard_of(const std::vector<std::string>& names, Shard shard) {
  const std::vector<bool> kept = in_shard(names, shard);
  std::vector<std::string> part;
  for (std::size_t k = 0; k < names.size(); ++k)
    if (kept[k]) part.push_back(names[k]);
  return part;
}
}  // namespace

TEST_CASE("--shard parses I/N and refuses the rest", "[shard]") {
  CHECK(parse_shard("2/5").index == 2);
  CHECK(parse_shard("2/5").count == 5);
  for (const char* bad : {"0/3", "4/3", "1/0", "1/", "/3", "a/b", "1/3x", "1-3", ""})
    CHECK_THROWS_AS(parse_shard(bad), InputError);
}

TEST_CASE("shards partition the cases: disjoint, complete, balanced, order kept", "[shard]") {
  std::vector<std::string> names;
  for (int k = 0; k < 23; ++k) names.push_back("case-" + std::to_string((k * 7) % 23));
  for (int count : {1, 2, 3, 5, 23, 30}) {
    std::multiset<std::string> seen;
    for (int index = 1; index <= count; ++index) {
      const auto part = shard_of(names, {index, count});
      CHECK(part.size() <= names.size() / std::size_t(count) + 1);
      CHECK(part.size() + 1 >= names.size() / std::size_t(count));
      for (std::size_t k = 1; k < part.size(); ++k) {  // loader order is kept
        const auto pos = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
        CHECK(pos(part[k - 1]) < pos(part[k]));
      }
      seen.insert(part.begin(), part.end());
    }
    CHECK(seen == std::multiset<std::string>(names.begin(), names.end()));
  }
}

TEST_CASE("the partition depends on the names only, not on their order", "[shard]") {
  const std::vector<std::string> forward{"a", "b", "c", "d", "e"}, backward{"e", "d", "c", "b", "a"};
  for (int index = 1; index <= 2; ++index) {
    const auto x = shard_of(forward, {index, 2}), y = shard_of(backward, {index, 2});
    CHECK(std::set<std::string>(x.begin(), x.end()) == std::set<std::string>(y.begin(), y.end()));
  }
  CHECK(case_list_digest({"a", "b"}) == case_list_digest({"b", "a"}));
  CHECK(case_list_digest({"a", "b"}) != case_list_digest({"a", "c"}));
  CHECK(case_list_digest({"ab"}) != case_list_digest({"a", "b"}));
  CHECK(case_list_digest({}) == "cbf29ce484222325");  // the FNV-1a 64 offset basis
}

namespace {

const std::vector<std::string> all_names{"a", "b", "c", "d", "e"};

json shard_report(int index, int count, std::vector<std::string> names, const std::string& version = "0.1.0") {
  json report = {{"schema_version", 1},
                 {"tool", {{"name", "attnconv"}, {"version", version}, {"git_commit", "abc"}}},
                 {"environment", {{"host", "node" + std::to_string(index)}, {"start_time", "t"}}},
                 {"summary", {{"seconds", 1.5}}},
                 {"shard", shard_record({index, count}, all_names)},
                 {"cases", json::array()}};
  for (const auto& n : names) report["cases"].push_back({{"name", n}, {"status", n == "d" ? "fail" : "pass"}});
  return report;
}

}  // namespace

TEST_CASE("merge joins shards in the unsharded order and recounts", "[shard]") {
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

TEST_CASE("merge refuses overlaps, gaps, mixed versions and foreign reports", "[shard]") {
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
  refuses({{"s1", one}, {"s2", other_list}}, "not the digest of its shard.all_cases");  // edited by hand
  other_list["shard"]["cases_digest"] = case_list_digest({"a", "b", "c", "d", "e", "f"});
  refuses({{"s1", one}, {"s2", other_list}}, "different case list");
  json huge_count = two;  // a count from the file: no allocation by it
  huge_count["shard"]["count"] = 2000000000;
  refuses({{"s1", one}, {"s2", huge_count}}, "shard count 2000000000 differs");
  json one_huge = one, two_huge = two;
  one_huge["shard"]["count"] = two_huge["shard"]["count"] = 2000000000;
  refuses({{"s1", one_huge}, {"s2", two_huge}}, "missing shard(s) 3/2000000000, 4/2000000000");
  refuses({}, "no report");
}
