// The resource-allocation scorers of kube-scheduler (noderesources, 1.26–1.30),
// computed on the cluster cache's view of the pods on each node
// (NodeInfo::usage), with the same integer arithmetic:
//
//   LeastAllocated            Σ w·((alloc - req)·100 / alloc) / Σ w   (req > alloc ⇒ 0)
//   MostAllocated             Σ w·(min(req, alloc)·100 / alloc) / Σ w
//   RequestedToCapacityRatio  round(Σ w·f(req·100 / alloc) / Σ w) over resources
//                             whose f(...) > 0, where f is the broken line
//                             through the shape points with scores ×10
//                             (req > alloc ⇒ f(100))
//   BalancedAllocation        trunc((1 - std)·100), std of the fractions
//                             min(req / alloc, 1): |f0 - f1| / 2 for two
//                             resources, the population std for more, 0 for one
//
// where, per configured resource, req = what the node's pods request + what the
// incoming pod requests and alloc = the node's allocatable. cpu and memory use
// the scoring requests (containers without a request count 100m / 200Mi) except
// in BalancedAllocation, which uses the plain requests as kube-scheduler does;
// ephemeral-storage and scalar resources always use the plain requests. A
// resource with zero allocatable is skipped, and so is a scalar resource
// (hugepages-*, extended) the pod does not request. Integer division truncates;
// every score is already in [0, 100], so Normalize is the default clamp.
//
// cpu, memory and ephemeral-storage are read from the node summary the
// resource policies share (resource_summary.h) when the cache wrote one;
// scalar resources from the node's allocatable and usage.
//
// args (JSON objects; unknown keys are errors; see resource_args.h):
//   resources: [{name, weight}], default [{cpu, 1}, {memory, 1}]; weight 1..100
//              (BalancedAllocation: 1 only, as kube-scheduler requires)
//   shape:     RequestedToCapacityRatio only, required:
//              [{utilization: 0..100, score: 0..10}], utilization increasing
//
// A request whose nodes lack usage (schedext runs without a Kubernetes API
// connection) fails as in PreScore (NeedsNodeUsage): "needs the cluster cache
// (no Kubernetes API connection)"; scoring every node as empty would
// silently mislead.
#ifndef SCHEDEXT_POLICY_BUILTIN_NODE_RESOURCES_ALLOCATION_SCORES_H_
#define SCHEDEXT_POLICY_BUILTIN_NODE_RESOURCES_ALLOCATION_SCORES_H_

#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "schedext/policy/policy.h"
#include "schedext/policy/registry.h"
#include "schedext/status.h"

namespace schedext::policy {

// Each builds its policy from `args`; kInvalidArgument naming the field (under
// context.args_path) for invalid args. The policies are immutable and
// thread-safe.
StatusOr<std::unique_ptr<Policy>> NewLeastAllocated(const nlohmann::json& args,
                                                    const PolicyContext& context);
StatusOr<std::unique_ptr<Policy>> NewMostAllocated(const nlohmann::json& args,
                                                   const PolicyContext& context);
StatusOr<std::unique_ptr<Policy>> NewBalancedAllocation(const nlohmann::json& args,
                                                        const PolicyContext& context);
StatusOr<std::unique_ptr<Policy>> NewRequestedToCapacityRatio(const nlohmann::json& args,
                                                              const PolicyContext& context);

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_BUILTIN_NODE_RESOURCES_ALLOCATION_SCORES_H_
