// GET /gpushare/inspect and /gpushare/inspect/<node>: the GPU-sharing state as
// the cluster cache holds it, for operators.
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
// Thread-safety: reads one snapshot; call from any thread.
#ifndef SCHEDEXT_SERVER_GPUSHARE_INSPECT_H_
#define SCHEDEXT_SERVER_GPUSHARE_INSPECT_H_

#include <string>
#include <string_view>

#include "schedext/cluster/cache.h"
#include "schedext/model/gpushare.h"

namespace schedext::server {

// Fills `body` and returns the HTTP status. `node` empty: every node.
int GpuShareInspect(const cluster::ClusterCache& cache,
                    const model::GpuShareConvention& convention, std::string_view node,
                    std::string& body);

}  // namespace schedext::server

#endif  // SCHEDEXT_SERVER_GPUSHARE_INSPECT_H_
