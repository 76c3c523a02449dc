// NodeNumeric: scores (and optionally filters) nodes by a numeric label or
// annotation that an outside agent writes (load, price, carbon intensity).
//
// args (JSON object; unknown keys are errors):
//   key:          string, required; a qualified name ("example.com/load")
//   source:       "label" (default) | "annotation"
//   prefer:       "higher" (default) | "lower"
//   missingValue: number; nodes lacking the key or with an unparsable value are
//                 treated as having it
//   min, max:     numbers, inclusive bounds (min <= max); nodes outside are
//                 rejected, which adds a FilterHook
// Values are parsed whole with std::from_chars, finite only. Filter verdicts
// (UnschedulableAndUnresolvable): "node(s) had <key> above <max>",
// "node(s) had <key> below <min>", "node(s) lacked a valid <key>" (no valid
// value, no missingValue). Score: min-max scaling of the values across the
// request's nodes onto [0, 100], best 100; nodes without a valid value get 0;
// all equal ⇒ 100. Raw scores are value × 1e6 rounded, clamped to ±1e18.
#ifndef SCHEDEXT_POLICY_BUILTIN_NODE_NUMERIC_NODE_NUMERIC_H_
#define SCHEDEXT_POLICY_BUILTIN_NODE_NUMERIC_NODE_NUMERIC_H_

#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "schedext/policy/policy.h"
#include "schedext/policy/registry.h"
#include "schedext/status.h"

namespace schedext::policy {

// Builds the policy from its `args`; kInvalidArgument naming the field
// (under context.args_path) for invalid args. The policy is immutable and
// thread-safe.
StatusOr<std::unique_ptr<Policy>> NewNodeNumeric(const nlohmann::json& args,
                                                 const PolicyContext& context);

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_BUILTIN_NODE_NUMERIC_NODE_NUMERIC_H_
