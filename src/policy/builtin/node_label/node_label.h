// NodeLabel: filters and scores nodes by label selectors written in the
// policy's configuration (the operator's counterpart of a pod's node affinity).
//
// args (JSON object; unknown keys are errors; at least one list non-empty):
//   required:  [selector]  the node must match every selector, else
//              UnschedulableAndUnresolvable "node(s) didn't match required labels"
//   forbidden: [selector]  a node matching any selector is rejected,
//              UnschedulableAndUnresolvable "node(s) had forbidden labels"
//   preferred: [{weight: 1..100, matchLabels, matchExpressions}]  score = sum of
//              the weights of matched terms, scaled so the best node gets 100
//              (Kubernetes' DefaultNormalizeScore)
//   selector:  {matchLabels: {key: value}, matchExpressions: [{key, operator:
//              In|NotIn|Exists|DoesNotExist|Gt|Lt, values: [string]}]}, all ANDed;
//              must not be empty; In/NotIn need values, Exists/DoesNotExist none,
//              Gt/Lt exactly one integer.
// Offers a FilterHook only with required or forbidden, a ScoreHook only with
// preferred.
#ifndef SCHEDEXT_POLICY_BUILTIN_NODE_LABEL_NODE_LABEL_H_
#define SCHEDEXT_POLICY_BUILTIN_NODE_LABEL_NODE_LABEL_H_

#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "schedext/policy/policy.h"
#include "schedext/policy/registry.h"
#include "schedext/status.h"

namespace schedext::policy {

// Builds the policy from its `args`; kInvalidArgument naming the field
// (under context.args_path) for invalid args. The policy is immutable and
// thread-safe.
StatusOr<std::unique_ptr<Policy>> NewNodeLabel(const nlohmann::json& args,
                                               const PolicyContext& context);

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_BUILTIN_NODE_LABEL_NODE_LABEL_H_
