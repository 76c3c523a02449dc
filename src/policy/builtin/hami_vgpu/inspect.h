// GET /hami/inspect and /hami/inspect/<node> (HamiVgpu's route): the vGPU
// state as the cluster cache holds it, for operators ("why is my pod
// pending", "who holds this device").
//
//   {"nodes":[{"name":"n1","usable":true,"devices":[{"uuid":"GPU-0",
//     "index":0,"type":"NVIDIA-A100","numa":0,"mode":"hami-core",
//     "healthy":true,"vgpus":10,"usedVgpus":2,"memory":81920,
//     "usedMemory":8000,"cores":100,"usedCores":40,"pods":[
//       {"namespace":"default","name":"a","uid":"..","vgpus":1,
//        "memory":4000,"cores":20,"assumed":false}, ...]}, ...]}, ...]}
//
// Every node whose register annotation decodes to at least one device,
// sorted by name; devices in registration order; pods by namespace/name.
// `usable` is false when the handshake is stale (the filter then sees no
// devices). The used amounts are the accounting's (what the filter reads);
// a pod is listed on the devices its hami.io/vgpu-devices-allocated names,
// on the node it is bound to (or, while its bind is in flight, the node of
// its hami.io/vgpu-node). /<node> answers that node's object alone; 404
// {"Error": ...} for a node unknown or without devices; 503 before the cache
// has synced or without a cluster connection.
//
// Gauges (AppendHamiMetrics, on GET /metrics): over the registered devices
// of every node, schedext_hami_vgpus, schedext_hami_memory_mib and
// schedext_hami_cores {state="total|used"} (used as the accounting counts
// it), and schedext_hami_devices{state="usable|unhealthy|stale"} (stale: the
// node's handshake leaves it without devices). All 0 without a snapshot.
//
// Thread-safety: reads one snapshot; call from any thread. O(nodes + pods)
// for the route, O(nodes) for the gauges: for operators and scrapes, never
// the request path.
#ifndef SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_INSPECT_H_
#define SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_INSPECT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "schedext/policy/cluster_view.h"
#include "schedext/policy/node_accounting.h"

namespace schedext::policy::hami {

// Fills `body` (JSON and a newline) and returns the HTTP status. `node` is
// the path after /hami/inspect/ ("" for every node); `count_resource` the
// profile's vGPU count resource (the handshake exception reads it).
int HamiInspect(const ClusterView* snapshot, NodeStateSlot slot, std::string_view count_resource,
                int64_t now_unix, std::string_view node, std::string& body);

// Appends the gauges' families (# HELP, # TYPE, samples) to `out`.
void AppendHamiMetrics(const ClusterView* snapshot, NodeStateSlot slot,
                       std::string_view count_resource, int64_t now_unix, std::string& out);

}  // namespace schedext::policy::hami

#endif  // SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_INSPECT_H_
