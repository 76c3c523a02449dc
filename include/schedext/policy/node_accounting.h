// NodeAccounting and WatchHandler: how a stateful policy keeps per-node state
// in the cluster cache, from the pods counted on each node and from extra
// resources it watches (PolicyHandle::AddNodeAccounting / Watch).
//
// The cache owns the bookkeeping and the snapshots; the policy owns the
// meaning. For every node the cache keeps one model::NodeState per registered
// accounting (NodeUsage::states, at the slot AddNodeAccounting returned) and
// rebuilds it incrementally, the way it keeps NodeUsage::requested:
//   * a pod starts or stops counting on a node (bound, reserved by the bind
//     cycle, confirmed, forgotten, expired, deleted, relisted): AddPod with
//     sign +1 / -1 — reservations count too, so a bind in flight is visible
//     to the next request at once;
//   * the node's entry is (re)built for any reason, or a WatchHandler asked
//     for it through NodeRefresher: Refresh, so that state derived from the
//     policy's own watched objects (GpuShare's unhealthy devices) follows.
// A state is immutable once returned: return a new object for a change, or
// the same pointer when nothing changed (the cache then copies nothing).
//
// Thread-safety: the cache calls every method here with its mutex held, from
// the informer threads and the bind cycle, one call at a time. Be quick, do
// no I/O, and never call the cache (or anything that waits for it). Data a
// WatchHandler keeps for Refresh is therefore only touched under the cache's
// mutex and needs no lock of its own; anything else the policy shares with
// request threads must be published through the states themselves.
#ifndef SCHEDEXT_POLICY_NODE_ACCOUNTING_H_
#define SCHEDEXT_POLICY_NODE_ACCOUNTING_H_

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "schedext/model/node_state.h"
#include "schedext/model/pod_info.h"
#include "schedext/wire/object_decoder.h"

namespace schedext::policy {

// Index of a policy's state in model::NodeStates (NodeUsage::states).
using NodeStateSlot = size_t;

class NodeAccounting {
 public:
  virtual ~NodeAccounting() = default;
  // Whether `pod` changes this state at all. Most pods do not, and then the
  // cache does not call AddPod. Must give the same answer for the same pod.
  virtual bool Counts(const model::PodInfo& pod) const = 0;
  // `state` (null: nothing counted on `node` yet) with `sign` (+1 or -1) ×
  // `pod` applied. Null clears the slot. Only called when Counts(pod).
  virtual std::shared_ptr<const model::NodeState> AddPod(
      std::string_view node, std::shared_ptr<const model::NodeState> state,
      const model::PodInfo& pod, int sign) const = 0;
  // `state` brought up to date with what the policy's watched objects say
  // about `node` (return `state` itself when that changed nothing). The
  // default keeps it.
  virtual std::shared_ptr<const model::NodeState> Refresh(
      std::string_view /*node*/, std::shared_ptr<const model::NodeState> state) const {
    return state;
  }
};

// One extra watch, of any resource the API serves, named as client-go's
// dynamic informers name it (a GroupVersionResource): `group` ("" for the
// core group: ConfigMaps, ResourceQuotas, ...; "resource.k8s.io",
// "example.com" for a CRD), `version` ("v1") and `resource`, the plural
// lower-case name of its REST path ("configmaps", "resourceslices"). The
// cluster layer builds the REST path from them. `namespace_name` ("" = all
// namespaces, and the only choice for cluster-scoped resources; prefer one
// for namespaced ones — a cluster-wide ConfigMap watch carries every
// application's configuration) and the API's selectors ("" = none), e.g.
// "app=gpu-health", "metadata.name=foo". The deployment must grant list and
// watch on the resource (deploy/ RBAC).
struct WatchSpec {
  std::string group;
  std::string version = "v1";
  std::string resource;
  std::string namespace_name;
  std::string label_selector;
  std::string field_selector;
};

// What a WatchHandler calls to have the cache Refresh a node's states after
// the handler changed what they are derived from. Names need only live for
// the call.
class NodeRefresher {
 public:
  virtual ~NodeRefresher() = default;
  virtual void RefreshNode(std::string_view node) = 0;
};

// The accounting hook of one watched resource: the cache calls it for each
// list and event of that watch (see the thread-safety note above). Until the
// first OnReplace the cache is not synced (requests answer "node cache not
// synced" and /readyz is false). Objects come raw (wire::RawObject: identity
// and JSON text); the handler decodes what it needs with a
// wire::ObjectDecoder of its own. Their views live only for the call.
class WatchHandler {
 public:
  virtual ~WatchHandler() = default;
  // The complete current set (first sync and every relist): objects not in
  // it are gone.
  virtual void OnReplace(std::span<const wire::RawObject> objects, NodeRefresher& refresh) = 0;
  // ADDED or MODIFIED.
  virtual void OnUpsert(const wire::RawObject& object, NodeRefresher& refresh) = 0;
  // DELETED; `object` is its last state.
  virtual void OnDelete(const wire::RawObject& object, NodeRefresher& refresh) = 0;
};

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_NODE_ACCOUNTING_H_
