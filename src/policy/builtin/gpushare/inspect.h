// GET /gpushare/inspect and /gpushare/inspect/<node> (GpuShare's route) and
// the GPU gauges of /metrics: the GPU-sharing state as the cluster cache
// holds it, for operators.
//
//   {"unit":"GiB","nodes":[{"name":"n1","gpuCount":2,"totalMemory":32,
//     "usedMemory":12,"freeMemory":20,"unassignedMemory":0,
//     "devices":[{"index":0,"healthy":true,"totalMemory":16,"usedMemory":12,
//       "freeMemory":4,"pods":[{"namespace":"default","name":"p1","uid":"..",
//         "memory":8,"assumed":false}, ...]}, ...]}, ...]}
//
// The list has every node with GPUs (NodeGpuShape().has_gpus()), sorted by
// name, devices by index, pods by namespace/name; freeMemory is floored at 0.
// /<node> answers that node's object alone, 404 {"Error": ...} when the node
// is unknown or has no GPUs; 503 before the cache has synced.
//
// Gauges (AppendGpuShareMetrics): schedext_gpushare_memory{state="total|used|
// free"} (in the convention's unit, over the devices of every node with GPUs;
// free floored at 0 per device and counting healthy devices only),
// schedext_gpushare_devices{health=...} and schedext_gpushare_unassigned_memory
// (pods asking for GPU memory on no device). Without a snapshot (no cluster
// connection) every gauge is 0. O(nodes): for scrapes, not the request path.
//
// Thread-safety: reads one snapshot; call from any thread.
#ifndef SCHEDEXT_POLICY_BUILTIN_GPUSHARE_INSPECT_H_
#define SCHEDEXT_POLICY_BUILTIN_GPUSHARE_INSPECT_H_

#include <string>
#include <string_view>

#include "policy/builtin/gpushare/convention.h"
#include "schedext/policy/cluster_view.h"
#include "schedext/policy/node_accounting.h"

namespace schedext::policy::gpushare {

// Fills `body` and returns the HTTP status. `node` empty: every node. `view`
// null (no cluster connection) answers 503 like an unsynced cache. `slot`:
// where GpuShare's accounting keeps the usage (accounting.h).
int GpuShareInspect(const ClusterView* view, const GpuShareConvention& convention,
                    NodeStateSlot slot, std::string_view node, std::string& body);

void AppendGpuShareMetrics(const ClusterView* view, const GpuShareConvention& convention,
                           NodeStateSlot slot, std::string& out);

}  // namespace schedext::policy::gpushare

#endif  // SCHEDEXT_POLICY_BUILTIN_GPUSHARE_INSPECT_H_
