// TaintToleration: Kubernetes' TaintToleration plugin. The filter rejects
// nodes with a NoSchedule or NoExecute taint the pod does not tolerate
// (UnschedulableAndUnresolvable "node(s) had untolerated taint"); the score
// counts untolerated PreferNoSchedule taints, fewer being better (reversed
// DefaultNormalizeScore). args: none ({} or null; any key is an error).
#ifndef SCHEDEXT_POLICY_BUILTIN_TAINT_TOLERATION_TAINT_TOLERATION_H_
#define SCHEDEXT_POLICY_BUILTIN_TAINT_TOLERATION_TAINT_TOLERATION_H_

#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "schedext/policy/policy.h"
#include "schedext/policy/registry.h"
#include "schedext/status.h"

namespace schedext::policy {

// Builds the policy from its `args`; kInvalidArgument naming the field
// (under context.args_path) for invalid args. The policy is immutable and
// thread-safe.
StatusOr<std::unique_ptr<Policy>> NewTaintToleration(const nlohmann::json& args,
                                                     const PolicyContext& context);

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_BUILTIN_TAINT_TOLERATION_TAINT_TOLERATION_H_
