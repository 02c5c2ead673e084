#pragma once
// The decay of the error along a sweep: for each sweep group over alpha,
// the least-squares line of ln(max_abs) against
// that key. Theorem 1's finite-alpha error decays like e^{-alpha}, so the
// slope over alpha should be close to -1 (docs/design.md, "Finite alpha").
#include <nlohmann/json.hpp>
#include <string>

namespace attnconv {

using json = nlohmann::json;

// `cases`: the report's case entries (name, status, sweep_group, sweep_point,
// metrics). One fit per sweep group with "alpha" among its swept keys, over the cases of the group
// whose other swept keys share a value (a sub-group per such value: "group" then
// names them too). Points used: the cases that ran with 0 < max_abs and
// max_abs > metrics.roundoff_allowance when that is reported (below it the error
// is round-off, not the decay). Each fit: {group, swept_key, metric, points_used,
// points_total, slope, intercept (of ln max_abs), note}; slope and intercept are
// null with fewer than 2 points used.
json fit_sweeps(const json& cases);

// The alpha-sweep group of one report case: its sweep_group plus
// "[key=value]" for each other swept key; empty when alpha is not swept.
std::string alpha_sweep_group(const json& c);

}  // namespace attnconv
