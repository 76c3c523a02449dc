// ClusterView: read access to one immutable snapshot of the cluster cache
// (nodes with their usage, pods bound, pending or reserved), as a policy sees
// it through its PolicyHandle. cluster::Snapshot implements it.
//
// Thread-safety: immutable; any number of threads may read one view at once.
// Pointers it returns stay valid while the view is alive (hold the
// shared_ptr the handle gave you).
#ifndef SCHEDEXT_POLICY_CLUSTER_VIEW_H_
#define SCHEDEXT_POLICY_CLUSTER_VIEW_H_

#include <cstddef>
#include <functional>
#include <string_view>

#include "schedext/model/node_info.h"
#include "schedext/model/pod_info.h"

namespace schedext::policy {

class ClusterView {
 public:
  virtual ~ClusterView() = default;
  ClusterView(const ClusterView&) = delete;
  ClusterView& operator=(const ClusterView&) = delete;

  // The node `name` (usage set), nullptr when unknown. No allocation.
  virtual const model::NodeInfo* FindNode(std::string_view name) const = 0;
  // The pod with `uid` (bound, pending or reserved; never terminal), nullptr
  // when unknown.
  virtual const model::PodInfo* FindPod(std::string_view uid) const = 0;
  // Usage counted against `name`, also for a node not (yet) known; nullptr
  // when nothing counts against it.
  virtual const model::NodeUsage* FindUsage(std::string_view name) const = 0;
  // fn(node) for every known node, in no order. O(nodes): for routes,
  // metrics and background work, never for the per-node loop.
  virtual void ForEachNode(const std::function<void(const model::NodeInfo&)>& fn) const = 0;
  // fn(pod, assumed) for every pod, in no order. O(pods).
  virtual void ForEachPod(
      const std::function<void(const model::PodInfo& pod, bool assumed)>& fn) const = 0;
  virtual size_t node_count() const = 0;
  // Every informer (nodes, pods and each registered watch) has delivered a
  // first complete list.
  virtual bool synced() const = 0;

 protected:
  ClusterView() = default;
};

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_CLUSTER_VIEW_H_
