// ClusterCache: schedext's own view of the cluster — nodes, the pods bound to
// them, and per node what those pods request — fed by the two informers and
// read by request threads through immutable Snapshots.
//
// Contents. Nodes by name. Pods by UID, terminal ones (Succeeded / Failed)
// excluded; a pod with spec.nodeName counts against that node, a pending pod
// is kept (so bind can find its requests) but counts nowhere. Per node a
// model::NodeUsage, as kube-scheduler's NodeInfo counts it: requested =
// Σ EffectiveRequests, scoring_requested = Σ ScoringRequests, pods = count;
// kept up to date incrementally (a pod event subtracts the old contribution
// and adds the new one). Pods whose node is not (yet) known are counted under
// that name and show up when the node does, as kube-scheduler's cache does.
// Pods being deleted (deletionTimestamp) still count until they are gone.
//
// Snapshots. Each applied event publishes a new immutable Snapshot through
// std::atomic<std::shared_ptr<const Snapshot>>. Nodes live in a persistent
// open-addressing table (copy-on-write blocks of slots) and pods in a
// persistent hash trie; their entries are std::shared_ptr<const ...> shared
// between snapshots: an event copies one node entry, one pod entry, the
// node table's root and the blocks it writes, and the trie path above the
// pod (a couple of hundred pointers), never the whole cluster. Resolving
// thousands of names reads the node table in place. A request loads one
// snapshot and reads it without any lock.
//
// Assume on bind (kube-scheduler's AssumePod / FinishBinding / ForgetPod /
// expiry). Reserving a pod on a node adds its requests to the node at once.
// The reservation ends when
//   * the pod watch shows the pod bound (confirm: the API's object replaces the
//     assumed one — on whatever node the API says — so it is never counted
//     twice), or shows it terminal or deleted;
//   * Forget() is called (the bind failed);
//   * its TTL expires: counted from FinishBinding() (or Assume()), checked
//     whenever an event or call is applied and by ExpireAssumed(). A TTL of 0
//     never expires (kube-scheduler's current default, after kubernetes#106361).
// Nothing is persisted: after a restart the state comes only from the API
// (pods' spec.nodeName), so nothing leaks or is counted twice.
//
// Policy state (CacheOptions::accountings and ::watches, registered by
// stateful policies through their PolicyHandle; policy/node_accounting.h).
// Each node's NodeUsage::states holds one model::NodeState per accounting,
// kept like `requested`: every pod that starts or stops counting on a node
// (bound, reserved, confirmed, forgotten, expired, deleted, relisted) goes
// through NodeAccounting::AddPod when the accounting Counts() it, and every
// (re)built node entry through Refresh. Reservations count the same way: the
// FitFn of AssumeIfFits may add annotations to the pod it reserves (GpuShare's
// device choice), so the reservation counts as they say at once, and the
// watch's object (annotated by then) replaces it. The objects of each extra
// watch reach its WatchHandler through WatchFeed(i) (an InformerHandler for
// that watch's informer), which may ask for nodes to be refreshed. The cache
// is synced only once every watch has delivered its first list too. Every
// accounting and handler call happens under mu_.
//
// Thread-safety: every method may be called from any thread. Mutations
// (informer callbacks, Assume*, Forget, ExpireAssumed) serialise on one mutex,
// mu_, which guards the index below and is never held while calling out of the
// cache except for the FitFn of AssumeIfFits (which must not call the cache or
// the API server). The API server is never called under it: the integrator
// reserves (AssumeIfFits), binds without any cache lock, then calls
// FinishBinding or Forget. snapshot() and Resolve() take no mutex.
#ifndef SCHEDEXT_CLUSTER_CACHE_H_
#define SCHEDEXT_CLUSTER_CACHE_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "schedext/cluster/informer.h"
#include "schedext/model/name_table.h"
#include "schedext/model/node_info.h"
#include "schedext/model/owned.h"
#include "schedext/model/pod_info.h"
#include "schedext/policy/node_summary.h"
#include "schedext/policy/cluster_view.h"
#include "schedext/policy/node_accounting.h"
#include "schedext/status.h"

namespace schedext::cluster {

namespace internal {
struct CacheState;  // the persistent node table and pod trie; defined in src/cluster/cache_index.h
}

// An immutable view of the cache at one moment. Pointers it returns stay valid
// while the Snapshot is alive (hold the shared_ptr). Policies see it as a
// policy::ClusterView (PolicyHandle::Snapshot).
class Snapshot final : public policy::ClusterView {
 public:
  ~Snapshot() override;
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;

  // The node `name` with `usage` pointing at its NodeUsage in this snapshot;
  // nullptr when the node is unknown. No allocation.
  const model::NodeInfo* FindNode(std::string_view name) const override;
  // The pod with `uid` (bound, pending or assumed; never terminal), nullptr if
  // unknown. For an assumed pod, node_name is the node it is assumed on.
  const model::PodInfo* FindPod(std::string_view uid) const override;
  // True when `uid` is counted through an assumption, not yet confirmed.
  bool IsAssumed(std::string_view uid) const;
  // Usage counted against `name`, also for a node not (yet) known; nullptr
  // when no pod counts against it.
  const model::NodeUsage* FindUsage(std::string_view name) const override;

  // Calls fn(const model::NodeInfo&) for every known node, in no order.
  void ForEachNode(const std::function<void(const model::NodeInfo&)>& fn) const override;
  // Calls fn(pod, assumed) for every pod (bound, pending or reserved), in no
  // order. O(pods): for operator endpoints, not for the request path.
  void ForEachPod(
      const std::function<void(const model::PodInfo& pod, bool assumed)>& fn) const override;

  size_t node_count() const override { return node_count_; }
  size_t pod_count() const;
  // Both informers have delivered a first complete list.
  bool synced() const override { return synced_; }
  // Increases with every published snapshot.
  uint64_t generation() const { return generation_; }

 private:
  friend class ClusterCache;
  Snapshot() = default;

  std::shared_ptr<const internal::CacheState> state_;
  size_t node_count_ = 0;
  bool synced_ = false;
  uint64_t generation_ = 0;
};

struct CacheOptions {
  // How long a reservation survives after its bind finished without the watch
  // confirming it. Zero: never expires.
  std::chrono::milliseconds assume_ttl{std::chrono::seconds(30)};
  // Test seam: the clock of the TTL. Default: std::chrono::steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> now;
  // The policies' per-node states, by slot (policy::PolicyHost::accountings);
  // none may be null.
  std::vector<std::shared_ptr<const policy::NodeAccounting>> accountings;
  // The policies' extra watches (policy::PolicyHost::watches), fed through
  // WatchFeed(i); none may be null. Each must deliver a first list before
  // the cache is synced.
  std::vector<std::shared_ptr<policy::WatchHandler>> watches;
  // The policies' interned names (model/name_table.h), frozen: every node's
  // labels, annotations, capacity and allocatable and every usage are tagged
  // with their ids in it when stored, so the policies' per-node lookups
  // compare ids. Null: no ids (lookups compare text; same answers).
  std::shared_ptr<const model::NameTable> names = nullptr;
  // The policies' node summaries (policy::PolicyHost::summaries), written
  // into every node entry the cache builds (policy/node_summary.h).
  std::vector<policy::NodeSummaryRegistration> summaries = {};
};

// A pod to reserve on a node.
struct AssumeRequest {
  std::string_view uid;
  std::string_view pod_namespace;
  std::string_view pod_name;
  std::string_view node;
  // The pod's requests (e.g. the pod of the filter request). nullptr: the
  // pending pod the pod informer reported with `uid`.
  const model::PodInfo* pod = nullptr;
};

struct CacheStats {
  size_t nodes = 0;
  size_t pods = 0;
  size_t assumed = 0;
  uint64_t generation = 0;
  bool nodes_synced = false;
  bool pods_synced = false;
  // Every extra watch (CacheOptions::watches) has delivered a first list;
  // true when there is none.
  bool watches_synced = false;
  // Slots and block pointers of the node table and the pod trie copied while
  // applying the last event or call: the per-event cost, independent of the
  // cluster's size (tests check it).
  size_t last_update_copied_slots = 0;
};

class ClusterCache final : public InformerHandler {
 public:
  // Called under mu_ with the pod (node_name = the target node) and the node as
  // the latest snapshot would show it (usage includes every reservation).
  // Must be fast and must not call the cache or the API server. It may add
  // annotations to `pod` (pod.annotations.Set): the reservation is made of
  // the pod as the FitFn leaves it (the text is copied before AssumeIfFits
  // returns, so the views need only live until then).
  using FitFn = std::function<bool(model::PodInfo& pod, const model::NodeInfo& node)>;

  explicit ClusterCache(CacheOptions options = {});
  ~ClusterCache() override;
  ClusterCache(const ClusterCache&) = delete;
  ClusterCache& operator=(const ClusterCache&) = delete;

  // The latest snapshot; never null. No mutex (an atomic load).
  std::shared_ptr<const Snapshot> snapshot() const;
  // Gives back a snapshot a request has finished with (leaves `snapshot`
  // null). When it is the last reference to a superseded snapshot, the
  // objects only it still holds (the versions of every pod and node changed
  // while the request ran) are not freed here but by the next update on the
  // informer's thread: freeing them on a request thread makes the request pay
  // for the watch traffic (thousands of frees, and glibc arena-lock contention
  // with the thread that allocated them: measured 1.5 ms → 100 ms for a
  // 5,000-node filter at 35,000 pod events/s, bench/cache_load.cc).
  void Release(std::shared_ptr<const Snapshot>& snapshot) const;
  bool Synced() const { return snapshot()->synced(); }
  CacheStats Stats() const;

  // ---- reservations ----

  // Check and reserve in one critical section: if `fits` accepts the pod on
  // the node's current view, counts the pod against it (binding in flight: no
  // TTL until FinishBinding) and answers true; otherwise changes nothing and
  // answers false. Already reserved on the same node with its bind finished
  // (FinishBinding), or already bound there: true, without counting it again
  // and without calling `fits`. Errors: kUnavailable before Synced();
  // kNotFound for an unknown node, or a pod neither given nor known;
  // kFailedPrecondition when the pod is bound or reserved on another node, or
  // when a bind of the pod is still in flight (reserved by an AssumeIfFits
  // not yet followed by FinishBinding or Forget: a duplicate bind must not
  // race the first one's annotation write).
  StatusOr<bool> AssumeIfFits(const AssumeRequest& request, const FitFn& fits);
  // Reserves unconditionally, binding finished (the TTL starts): for a bind
  // that succeeded without a prior AssumeIfFits. The node need not be known.
  // Errors as AssumeIfFits, except kUnavailable and an unknown node.
  Status Assume(const AssumeRequest& request);
  // The bind succeeded: the reservation's TTL starts now. kNotFound when `uid`
  // is not reserved (it may already be confirmed by the watch: not an error
  // for the caller to act on).
  Status FinishBinding(std::string_view uid);
  // The bind failed: drops the reservation (the pod is pending again).
  // kNotFound when `uid` is not reserved.
  Status Forget(std::string_view uid);
  // Drops the reservations whose TTL has passed; returns how many. Call it
  // periodically (events and calls also check); it also frees released
  // snapshots when no event has come to do it.
  size_t ExpireAssumed();

  // ---- InformerHandler (called by the informers' threads) ----
  // Nodes and pods; other kinds go through WatchFeed and are ignored here.
  void OnReplace(ResourceKind kind, std::vector<InformerObject> objects) override;
  void OnUpsert(ResourceKind kind, InformerObject object) override;
  void OnDelete(ResourceKind kind, InformerObject object) override;
  // The handler for the informer of CacheOptions::watches[watch] (which must
  // exist); it lives as long as the cache.
  InformerHandler& WatchFeed(size_t watch);

  // ---- reading by name ----
  // out[i] = the node named names[i] in one snapshot (nullptr when unknown);
  // `snapshot` receives that snapshot, which the pointers point into.
  // kUnavailable ("node cache not synced") before Synced().
  Status Resolve(std::span<const std::string_view> names, std::vector<const model::NodeInfo*>& out,
                 std::shared_ptr<const Snapshot>& snapshot) const;

 private:
  struct Index;  // the mutable bookkeeping, guarded by mu_; defined in src/cluster/cache_index.h
  class Feed;    // WatchFeed's handlers; defined in cache.cc
  // One event of watch `watch`, applied under mu_ and published.
  void ApplyWatch(size_t watch, const std::function<void(policy::WatchHandler& handler,
                                                        policy::NodeRefresher& refresh)>& apply,
                  bool replace);

  std::chrono::steady_clock::time_point Now() const;
  // Starts an update: expires due reservations, resets the copy count. Requires mu_.
  void BeginUpdateLocked();
  // Publishes the index as a new snapshot. Requires mu_.
  void PublishLocked();
  StatusOr<bool> ReserveLocked(const AssumeRequest& request, const FitFn* fits, bool finished);

  // Frees the released snapshots (never under mu_).
  void DrainReleased() const;

  const CacheOptions options_;
  mutable std::mutex mu_;
  // Snapshots released by requests, freed by DrainReleased.
  mutable std::mutex released_mu_;
  mutable std::vector<std::shared_ptr<const Snapshot>> released_;  // guarded by released_mu_
  std::unique_ptr<Index> index_;                          // guarded by mu_
  std::vector<std::unique_ptr<Feed>> feeds_;              // one per watch; immutable
  std::atomic<std::shared_ptr<const Snapshot>> current_;  // written under mu_, read anywhere
};

}  // namespace schedext::cluster

#endif  // SCHEDEXT_CLUSTER_CACHE_H_
