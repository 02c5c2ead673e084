#include <catch2/catch.hpp>
#include <set>

#include "harness/errors.hpp"
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
std::vector<Case> named(const std::vector<std::string>& names) {
  std::vector<Case> cases;
  for (const auto& n : names) cases.push_back(make_case(n));
  return cases;
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
  const auto cases = named(names);
  for (int count : {1, 2, 3, 5, 23, 30}) {
    std::multiset<std::string> seen;
    for (int index = 1; index <= count; ++index) {
      const auto part = select_shard(cases, {index, count});
      CHECK(part.size() <= cases.size() / std::size_t(count) + 1);
      CHECK(part.size() + 1 >= cases.size() / std::size_t(count));
      for (std::size_t k = 1; k < part.size(); ++k) {  // loader order is kept
        const auto pos = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
        CHECK(pos(part[k - 1].name) < pos(part[k].name));
      }
      for (const auto& c : part) seen.insert(c.name);
    }
    CHECK(seen == std::multiset<std::string>(names.begin(), names.end()));
  }
}

TEST_CASE("the partition depends on the names only, not on their order", "[shard]") {
  const auto forward = named({"a", "b", "c", "d", "e"}), backward = named({"e", "d", "c", "b", "a"});
  for (int index = 1; index <= 2; ++index) {
    std::set<std::string> x, y;
    for (const auto& c : select_shard(forward, {index, 2})) x.insert(c.name);
    for (const auto& c : select_shard(backward, {index, 2})) y.insert(c.name);
    CHECK(x == y);
  }
  CHECK(case_list_digest({"a", "b"}) == case_list_digest({"b", "a"}));
  CHECK(case_list_digest({"a", "b"}) != case_list_digest({"a", "c"}));
  CHECK(case_list_digest({"ab"}) != case_list_digest({"a", "b"}));
  CHECK(case_list_digest({}) == "cbf29ce484222325");  // the FNV-1a 64 offset basis
}
