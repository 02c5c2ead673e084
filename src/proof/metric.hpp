#pragma once
// A metric a proof reports, declared once as a handle with its meaning:
//
//   inline const Metric band_error{.name = "band_error", .type = MetricType::integer, .help = "..."};
//
// The handle is listed in the proof's `.metrics` (the report schema and the
// tolerances a case may give come from that list), set with
// `out.set(band_error, value)` and keys the outcome's tolerances, so a
// misspelt metric does not compile.
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace attnconv {

using json = nlohmann::json;

// The JSON Schema type of a metric's value; a number may also be null (NaN
// and Inf are written as null).
enum class MetricType { number, integer, string, boolean, array, object };
std::string to_string(MetricType type);  // "number", ...

struct Metric {
  std::string name;
  MetricType type = MetricType::number;
  std::string help = {};
  bool always = true;     // present in every non-error case (else only sometimes)
  bool error = false;     // a distance between the claim and its reference: the only metrics a tolerance may name
  bool nullable = false;  // may be null (besides a non-finite number)

  // The same metric with a proof's own words for it.
  Metric described(std::string words) const {
    Metric m = *this;
    m.help = std::move(words);
    return m;
  }
};

namespace metric {

// The distances every proof reports (distance_metrics gives them the proof's words).
inline const Metric max_abs{.name = "max_abs", .help = "max |a - b| over the output", .error = true};
inline const Metric rel_l2{.name = "rel_l2", .help = "||a - b||_2 / ||b||_2", .error = true};

// What the harness adds to any proof's metrics (run/case_run.hpp).
inline const Metric reference_max_abs{
    .name = "reference_max_abs",
    .help = "with a reference_output: max |the proof's reference - reference_output| (an outside implementation's "
            "output for the same input)",
    .always = false, .error = true};
inline const Metric reference_rel_l2{
    .name = "reference_rel_l2", .help = "with a reference_output: rel_l2 of the proof's reference against reference_output",
    .always = false, .error = true};
inline const Metric max_abs_per_sample{
    .name = "max_abs_per_sample", .type = MetricType::array,
    .help = "a batch input: max_abs of each sample (the other metrics are the worst sample's)", .always = false};
inline const Metric float64_verdict{
    .name = "float64_verdict", .type = MetricType::string,
    .help = "a float32 case that holds to round-off: the verdict of the same case in float64 (the float32 verdict is "
            "'holds' only when this is too; docs/reports.md, \"float32\")",
    .always = false};
inline const Metric worst_sample{.name = "worst_sample", .type = MetricType::integer,
                                 .help = "a batch input: the sample the other metrics are of", .always = false};

}  // namespace metric

// max_abs and rel_l2 described as `what` ("MHSA against the plain-loop
// convolution"), the proof's own metrics `more`, then the harness's.
std::vector<Metric> distance_metrics(const std::string& what = "the claim against its reference",
                                     std::vector<Metric> more = {});

// A tolerance: each error metric with the largest value within it, as the
// report writes it: tolerance({{metric::max_abs, bound}}).
using MetricLimit = std::pair<std::reference_wrapper<const Metric>, double>;
json tolerance(std::initializer_list<MetricLimit> limits);

}  // namespace attnconv
