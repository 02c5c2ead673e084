#pragma once
// JSON Schemas (draft 2020-12) generated from the proof registry, so they
// cannot drift from the loader: cases/schema.json (`attnconv schema cases`)
// and reports/schema.json (`attnconv schema report`). The committed files are
// tested to equal these. Cross-parameter checks (the kernel fits the padded
// image, enough heads, ...) are the proofs' validate() and are not in the
// schema; everything per key is.
#include <nlohmann/json.hpp>

#include "proof/params.hpp"

namespace attnconv {

json param_schema(const ParamSpec& spec);  // one parameter value
json case_file_schema();                   // a file of cases/
json report_schema();                      // report.json

}  // namespace attnconv
