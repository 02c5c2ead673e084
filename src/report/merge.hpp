#pragma once
// `attnconv merge`: joins the reports of `run --shard I/N` into the report the
// unsharded run would have written (the same cases, in the same order; only
// timings and environment differ). Refuses, with InputError, reports that are
// not shard reports, come from a different tool version or commit, belong to a
// different case list, repeat a shard or a case, or leave a shard or a case out.
#include <string>
#include <vector>

#include "proof/proof.hpp"

namespace attnconv {

struct ShardReport {
  std::string file;  // for messages
  json report;
};

json merge_reports(const std::vector<ShardReport>& shards);

// Reads a report file; InputError naming the file when it is missing or not JSON.
ShardReport read_report(const std::string& path);

}  // namespace attnconv
