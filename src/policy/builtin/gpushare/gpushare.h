// GpuShare: GPU memory sharing for pods of the gpushare device plugin
// (AliyunContainerService/gpushare-device-plugin), in place of the original
// gpushare-scheduler-extender. Filters nodes by per-device free GPU memory,
// scores them, picks victims on one device for preemption, and at bind
// reserves a device by annotating the pod the way the plugin expects.
//
// Compatibility with the device plugin (convention.h has the conventions):
// every device of a node holds capacity[gpu-mem] / capacity[gpu-count]
// (integer division), a pod's request must fit on ONE device, and the device
// is chosen by best fit — the healthy device with the least free memory that
// still holds the request, the lowest index on ties — which is what the
// original extender's allocateGPUID does. The annotations written at bind are
// the ones the plugin's Allocate looks for.
//
// args (JSON object; unknown keys are errors):
//   scoring: "binpack" (default) | "spread"
//   the device plugin's names, each a non-empty string (convention.h has
//   the defaults): memoryResource, countResource, indexAnnotation,
//   podMemoryAnnotation, deviceMemoryAnnotation, assignedAnnotation,
//   assumeTimeAnnotation, unhealthyNamespace, unhealthyPrefix, unhealthyKey,
//   unit. Every profile's GpuShare must give the same names: they share one
//   accounting.
//
// Through its PolicyHandle (once, shared by every profile's instance):
//   * per-node GPU state in the cluster cache (accounting.h): per-device
//     memory of the pods counted on the node, and its unhealthy devices from
//     a watch of the ConfigMaps of unhealthyNamespace;
//   * GET /gpushare/inspect[/<node>] and the schedext_gpushare_* gauges
//     (inspect.h);
//   * RequireCluster: schedext refuses to start without the Kubernetes API.
// and by each instance, so that each profile's loops prefetch it: a node
// summary (summary.h) the per-node Filter and Score read instead of the
// node's capacity and GPU state.
//
// Pods that ask for no GPU memory pass the filter, score 0 on every node
// (neutral: no GPU node is preferred or avoided), need none of the victims in
// preemption and get no annotations at bind.
//
// Filter (EvictionCanHelp: evicting pods frees device memory, which also
// makes bind's CheckFit re-run this filter inside the cache's critical
// section):
//   no usage (no cluster cache)   kError "GpuShare needs schedext's cluster
//                                 cache (no Kubernetes API connection)"; also
//                                 for pods without a GPU request, so that the
//                                 misconfiguration shows on the first request
//   node without shared GPUs      Unresolvable "node(s) had no shared GPU"
//   no healthy device that large  Unresolvable "node(s) had no healthy GPU large
//                                 enough for the pod's <memoryResource>"
//   no device with room now       Unschedulable "Insufficient <memoryResource>
//                                 on any one GPU"
// The reasons carry no amounts: kube-scheduler counts nodes per distinct
// reason in the pod's FailedScheduling event. Detail (explain) says the
// request and, per node, the largest free amount and the shortfall, or the
// size of its devices.
//
// Score, after placing the request by best fit (a node where it does not fit
// scores 0); both values are in [0, 100], so the default Normalize (clamp)
// leaves them as they are:
//   binpack  100 × (device memory − free after) / device memory of the chosen
//            device: fuller devices first, keeping whole devices free
//   spread   100 × (Σ free − req) / Σ device memory, over healthy devices:
//            emptier nodes first
//
// Preempt (SelectVictims): a victim frees memory only on the device its index
// annotation names. For each healthy device large enough for the request, the
// victims on it are evicted in thought, then reprieved from the most important
// down while the request still fits. The device that needs the fewest
// victims wins (lowest index on ties); only its victims stay needed. Free
// memory after evicting is device memory − (used − freed), so an
// over-committed device frees only what exceeds its over-commitment. No such
// device drops the node: Unschedulable "no GPU has enough memory even after
// evicting the victims".
//
// Reserve, in the cache's critical section with the latest usage: places the
// request by best fit and appends index=device, pod memory=req, device
// memory, assigned="false" and assume time=now in Unix nanoseconds (decimal
// strings, in that order). Refuses (kFailedPrecondition) when no device has
// room, or when the node has no usage.
#ifndef SCHEDEXT_POLICY_BUILTIN_GPUSHARE_GPUSHARE_H_
#define SCHEDEXT_POLICY_BUILTIN_GPUSHARE_GPUSHARE_H_

#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "schedext/policy/policy.h"
#include "schedext/policy/registry.h"
#include "schedext/status.h"

namespace schedext::policy {

// Builds the policy from its `args`; kInvalidArgument naming the field (under
// context.args_path) for invalid args, or when another profile's GpuShare
// gave other names. Registers through *context.handle; without a handle it
// registers nothing and sees no GPU usage (Profile::Build always gives one).
// The policy is immutable and thread-safe.
StatusOr<std::unique_ptr<Policy>> NewGpuShare(const nlohmann::json& args,
                                              const PolicyContext& context);

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_BUILTIN_GPUSHARE_GPUSHARE_H_
