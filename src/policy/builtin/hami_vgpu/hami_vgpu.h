// HamiVgpu: NVIDIA vGPU sharing in HAMi's protocol, in place of HAMi's
// scheduler extender, with HAMi's device plugin, webhook and HAMi-core left
// as they are. docs/hami.md names the HAMi source followed and every
// deliberate difference.
//
// Devices come from each node's hami.io/node-nvidia-register annotation
// (protocol.h: JSON or the older text form, at most kMaxDevices devices); a
// node whose hami.io/node-handshake is stale (protocol.h HandshakeStale) and
// whose allocatable nvidia.com/gpu is not positive has none. What pods use
// of them is counted in the cluster cache from their
// hami.io/vgpu-devices-allocated annotations (accounting.h). Filter and Score
// read both from the node summary the cache writes (summary.h) unless the
// pod's rules name devices or the node is not summarized (a full-mode node
// from the request body, an unusual node); then they decode the node.
//
// A pod asks for vGPUs when a container (init or regular) names the count
// resource; its requests, the pod's type/UUID/mode/NUMA annotations and the
// device order follow HAMi (fit.h). Pods that ask for none pass the filter,
// score 0 and get no annotations.
//
// args (JSON object; unknown keys are errors):
//   nodeSchedulerPolicy: "binpack" (default) | "spread"; a pod's
//     hami.io/node-scheduler-policy of either value wins
//   gpuSchedulerPolicy:  "spread" (default) | "binpack"; a pod's
//     hami.io/gpu-scheduler-policy of either value wins
//   resourceCountName, resourceMemoryName, resourceMemoryPercentageName,
//   resourceCoreName: non-empty strings (HAMi's defaults, protocol.h)
//   defaultMemory, defaultCores: integers >= 0 (HAMi's defaults: 0)
//   nodeLockExpirySeconds: 1..86400 (default 300): when a node lock counts as
//     expired; set it to what HAMI_NODELOCK_EXPIRE says where HAMi sets one
//
// Filter (kError without the cluster cache: no node usage): a node without
// usable devices is Unresolvable "node(s) have no HAMi vGPU devices"; a pod
// that does not fit gets fit.h's Reason(), Unresolvable for device
// properties (too few devices, type, UUID, health), Unschedulable for
// usage. The texts are fixed: per-node detail belongs to /explain (Detail:
// why the node has no devices, or its freest usable device against the
// largest vGPU asked for, with ", short by <N> MiB" when memory is missing).
//
// Score: NodeScore (fit.h) of the node with the pod placed; 0 where it does
// not fit.
//
// Preempt (SelectVictims; EvictionCanHelp, so preempt skips Filter): a victim
// frees what its hami.io/vgpu-devices-allocated holds on this node's devices.
// The node is dropped when the pod does not fit even with every victim gone
// (the fit's reason); otherwise victims are reprieved from the most important
// down while the pod still fits, and the rest are needed. kube-scheduler only
// proposes victims its own filters need gone (the node's nvidia.com/gpu
// count, cpu, memory): this trims and checks them against the devices; it
// cannot add a victim for GPU memory or cores alone.
//
// Reserve (bind, in the cache's critical section): places the pod again on
// the latest usage and appends, in this order, hami.io/vgpu-devices-to-allocate
// and hami.io/vgpu-devices-allocated (the same text: one ";"-terminated entry
// per init then regular container, "uuid,NVIDIA,mem,cores:" per device),
// hami.io/vgpu-node (the node), hami.io/vgpu-time and hami.io/bind-time (Unix
// seconds), hami.io/bind-phase "allocating". Refuses (kFailedPrecondition)
// when the pod no longer fits. The bind cycle then takes HAMi's node lock
// (NodeLock: hami.io/mutex.lock, "<RFC3339 time>,<namespace>,<pod>", free
// after nodeLockExpirySeconds) before the Binding, as HAMi's scheduler does: the device
// plugin finds the pod to allocate through it and releases it.
#ifndef SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_HAMI_VGPU_H_
#define SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_HAMI_VGPU_H_

#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "schedext/policy/policy.h"
#include "schedext/policy/registry.h"
#include "schedext/status.h"

namespace schedext::policy {

// Builds the policy from its `args` (kInvalidArgument naming the field).
// Registers once through *context.handle (shared by every profile's
// instance): the accounting, GET /hami/inspect and the schedext_hami_*
// gauges (inspect.h, with the first profile's count resource) and the
// requirement of the cluster. Without a handle it counts
// nothing and every node has no usage. Immutable and thread-safe.
StatusOr<std::unique_ptr<Policy>> NewHamiVgpu(const nlohmann::json& args,
                                              const PolicyContext& context);

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_HAMI_VGPU_H_
