// PolicyHandle: what a policy factory may use besides its args, in the spirit
// of the scheduling framework's framework.Handle. Stateless policies ignore
// it; a stateful one (GpuShare, NodeLoad) registers through it everything it
// needs from the rest of schedext, so that a new policy is one folder plus
// one registry line — no edits to the cache, the config, the server or main.
//
// What a factory may do with it (all registrations happen in the factory,
// i.e. while the profiles are built, before anything runs):
//   * Snapshot(): read the cluster cache's current snapshot (null without a
//     cluster connection, and always null while factories run; call it from
//     hooks that are not per-node, routes, metrics and background work).
//   * AddNodeAccounting / Watch: keep per-node state in the cache's snapshots
//     from the pods on each node and from extra watched resources
//     (node_accounting.h), read lock-free in the per-node hooks through
//     node.usage->states.Get(slot).
//   * AddNodeSummary: a few bytes per node the cache derives from the node
//     and its usage whenever it stores them, read by the per-node hooks from
//     the node's first cache lines (node_summary.h).
//   * AddGetRoute: a read-only GET endpoint (JSON) on the main listener.
//   * AddMetrics: metric families appended to GET /metrics at scrape time.
//   * AddReadiness: a condition /readyz waits for (a policy's data synced).
//   * AddBackgroundTask: work off the request path, started and stopped by
//     the handle's owner (background.h).
//   * OnPodBound: learn about every pod schedext's bind cycle has bound.
//   * RequireCluster: refuse to run without the Kubernetes API.
//   * Shared: one object per key across the profiles (two profiles using the
//     same policy share one accounting, route and watch instead of
//     registering them twice).
// The policy's configuration is its `args` (registry.h), nothing global.
// Reserve/Unreserve at bind are policy hooks (ReserveHook in policy.h), run
// by the bind cycle (pipeline/bind_cycle.h).
//
// Registration errors (kInvalidArgument: a duplicate route path, a bad
// spec) are returned for the factory to pass up; start-up then fails naming
// the policy.
//
// Thread-safety: the registration methods are for the factory's thread only,
// before the server starts. Snapshot() may be called from any thread at any
// time. Every callback registered here (routes, metrics, readiness, pod-bound
// observers) may be called concurrently from several threads and must be
// thread-safe; none is called with a schedext lock held, except the
// accounting hooks (see node_accounting.h).
#ifndef SCHEDEXT_POLICY_HANDLE_H_
#define SCHEDEXT_POLICY_HANDLE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "schedext/model/pod_info.h"
#include "schedext/policy/background.h"
#include "schedext/policy/cluster_view.h"
#include "schedext/policy/node_accounting.h"
#include "schedext/policy/node_summary.h"
#include "schedext/status.h"

namespace schedext::policy {

// A GET route: `rest` is the path after the route's own path and a "/" (""
// for the path itself, e.g. "node-1" for /gpushare/inspect/node-1). Fills
// `body` with JSON and returns the HTTP status (200, 404, 503, ...).
using GetRouteHandler = std::function<int(std::string_view rest, std::string& body)>;

// Appends complete Prometheus text-format families (# HELP, # TYPE, samples)
// to `out`. Names start with "schedext_" and are the policy's own.
using MetricsWriter = std::function<void(std::string& out)>;

// A pod schedext has just bound: `pod` as the bind cycle reserved it (its
// requests, and annotations the ReserveHooks added), `node` its node. Called
// after the API server accepted the Binding (or timed out: the Binding may
// exist), on the bind's thread, outside every lock. Must be quick (it delays
// the bind's reply): record, do not compute. The views live for the call.
using PodBoundObserver = std::function<void(const model::PodInfo& pod, std::string_view node)>;

class PolicyHandle {
 public:
  virtual ~PolicyHandle() = default;
  PolicyHandle(const PolicyHandle&) = delete;
  PolicyHandle& operator=(const PolicyHandle&) = delete;

  // ---- reading the cluster ----

  // The cache's latest snapshot; null when schedext runs without a cluster
  // connection or before it is attached (while factories run). Lock-free
  // (an atomic load). Hold it only as long as you read it.
  virtual std::shared_ptr<const ClusterView> Snapshot() const = 0;

  // ---- per-node state in the cache ----

  // Registers per-node state; returns its slot in NodeUsage::states.
  virtual StatusOr<NodeStateSlot> AddNodeAccounting(
      std::shared_ptr<const NodeAccounting> accounting) = 0;
  // Watches the resource `spec` names (any group/version/resource) besides
  // nodes and pods; the cache hands its lists and events to `handler`, as
  // raw objects, and is not synced before the first list.
  // kInvalidArgument for a malformed group, version, resource, namespace or
  // selector.
  virtual Status Watch(WatchSpec spec, std::shared_ptr<WatchHandler> handler) = 0;

  // The summary `summarize(const model::NodeInfo&) -> T` of every node the
  // cache stores. An empty slot when the nodes' summary bytes are used up
  // (or the handle keeps none): the policy then computes T from each node.
  template <typename T, typename Fn>
  NodeSummarySlot<T> AddNodeSummary(Fn summarize) {
    std::optional<size_t> offset = AddNodeSummarizer(
        sizeof(T), alignof(T), std::make_shared<FunctionSummarizer<T, Fn>>(std::move(summarize)));
    return offset.has_value() ? NodeSummarySlot<T>(*offset, this) : NodeSummarySlot<T>();
  }
  // Reserves `size` bytes at `alignment` of NodeInfo::summary for
  // `summarizer`, in this handle's layout (its registrations carry `this`):
  // the offset, or nullopt when they do not fit. The default keeps no
  // summaries.
  virtual std::optional<size_t> AddNodeSummarizer(size_t /*size*/, size_t /*alignment*/,
                                                  std::shared_ptr<const NodeSummarizer>) {
    return std::nullopt;
  }
  // One past the last summary byte reserved so far.
  virtual size_t NodeSummaryBytesUsed() const { return 0; }

  // ---- what the policy shows ----

  // GET `path` and `path`/... on the main listener. `path` starts with "/"
  // and does not collide with schedext's own (/healthz, /readyz, /version,
  // /metrics, the verbs) or another policy's route: kInvalidArgument.
  virtual Status AddGetRoute(std::string path, GetRouteHandler handler) = 0;
  virtual void AddMetrics(MetricsWriter writer) = 0;
  // /readyz answers 503 while `ready` is false; `name` says which condition
  // in the log and the body ("NodeLoad: first sample").
  virtual void AddReadiness(std::string name, std::function<bool()> ready) = 0;

  // ---- work off the request path ----

  virtual void AddBackgroundTask(std::unique_ptr<BackgroundTask> task) = 0;
  virtual void OnPodBound(PodBoundObserver observer) = 0;

  // ---- requirements and sharing ----

  // Start-up fails with `reason` when schedext has no Kubernetes API
  // connection (cluster.mode disabled, or auto with none found).
  virtual void RequireCluster(std::string reason) = 0;

  // The object registered under `key` (e.g. "GpuShare"), created by `make` on
  // the first call. Lets every profile's instance of a policy share one
  // accounting / route / watch. `make` runs at most once per key and may
  // itself register through this handle; its error is returned (and not
  // cached). The object lives as long as the handle's owner.
  template <typename T>
  StatusOr<std::shared_ptr<T>> Shared(std::string_view key,
                                      const std::function<StatusOr<std::shared_ptr<T>>()>& make) {
    std::shared_ptr<void> found = FindShared(key);
    if (found != nullptr) {
      return std::static_pointer_cast<T>(std::move(found));
    }
    StatusOr<std::shared_ptr<T>> made = make();
    if (made.ok()) {
      KeepShared(std::string(key), *made);
    }
    return made;
  }

 protected:
  PolicyHandle() = default;
  // Storage behind Shared(): the object under `key`, or null.
  virtual std::shared_ptr<void> FindShared(std::string_view key) const = 0;
  virtual void KeepShared(std::string key, std::shared_ptr<void> object) = 0;
};

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_HANDLE_H_
