// NodeHealth: rejects nodes that are cordoned, not ready or under pressure,
// all as UnschedulableAndUnresolvable, checked in this order:
//   unschedulable       spec.unschedulable, unless the pod tolerates
//                       node.kubernetes.io/unschedulable:NoSchedule
//                       → "node(s) were unschedulable"
//   notReady            Ready condition absent or not "True" → "node(s) were not ready"
//   memoryPressure      MemoryPressure "True" → "node(s) had memory pressure"
//   diskPressure        DiskPressure "True" → "node(s) had disk pressure"
//   pidPressure         PIDPressure "True" → "node(s) had PID pressure"
//   networkUnavailable  NetworkUnavailable "True" → "node(s) had network unavailable"
// args: each name above, a bool, default true (false disables that check);
// unknown keys are errors. Filter only.
#ifndef SCHEDEXT_POLICY_BUILTIN_NODE_HEALTH_NODE_HEALTH_H_
#define SCHEDEXT_POLICY_BUILTIN_NODE_HEALTH_NODE_HEALTH_H_

#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "schedext/policy/policy.h"
#include "schedext/policy/registry.h"
#include "schedext/status.h"

namespace schedext::policy {

// Builds the policy from its `args`; kInvalidArgument naming the field
// (under context.args_path) for invalid args. The policy is immutable and
// thread-safe.
StatusOr<std::unique_ptr<Policy>> NewNodeHealth(const nlohmann::json& args,
                                                const PolicyContext& context);

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_BUILTIN_NODE_HEALTH_NODE_HEALTH_H_
