// NodeResourcesFit: rejects nodes without room for the pod's requests, with
// kube-scheduler's NodeResourcesFit filter arithmetic (fitsRequest, 1.26–1.30),
// on the cluster cache's view of the pods on each node (NodeInfo::usage).
//
// args (JSON object; unknown keys are errors; see resource_args.h):
//   ignoredResources:      [names]    extended resources not checked
//   ignoredResourceGroups: [prefixes] extended resources "<prefix>/..." not checked
//
// Filter, in this order, the first shortfall being the verdict's reason:
//   "Too many pods"              usage.pods + 1 > allocatable pods
//   "Insufficient cpu"           request > allocatable - requested, for cpu,
//   "Insufficient memory"        memory and ephemeral-storage when the pod
//   "Insufficient ephemeral-storage"  requests a positive amount
//   "Insufficient <name>"        the same for every hugepages-* and extended
//                                resource the pod requests (absent from the
//                                node's allocatable ⇒ 0), except ignored ones
// kube-scheduler lists every shortfall; a verdict carries one reason, so this
// reports the first. The verdict is Unschedulable: evicting pods can help, and
// the policy's PreemptHook decides which victims are needed.
// cpu, memory, ephemeral-storage and the pod count are read from the node
// summary the resource policies share (resource_summary.h) when the cache
// wrote one; scalar resources from the node's allocatable and usage.
// A node without usage (schedext runs without a Kubernetes API connection)
// fails the request with kError: "NodeResourcesFit needs the cluster cache (no
// Kubernetes API connection)".
#ifndef SCHEDEXT_POLICY_BUILTIN_NODE_RESOURCES_NODE_RESOURCES_FIT_H_
#define SCHEDEXT_POLICY_BUILTIN_NODE_RESOURCES_NODE_RESOURCES_FIT_H_

#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "schedext/policy/policy.h"
#include "schedext/policy/registry.h"
#include "schedext/status.h"

namespace schedext::policy {

// Builds the policy from its `args`; kInvalidArgument naming the field (under
// context.args_path) for invalid args. The policy is immutable and thread-safe.
StatusOr<std::unique_ptr<Policy>> NewNodeResourcesFit(const nlohmann::json& args,
                                                      const PolicyContext& context);

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_BUILTIN_NODE_RESOURCES_NODE_RESOURCES_FIT_H_
