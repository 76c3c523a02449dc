// PolicyHost: the concrete PolicyHandle, owned by whoever builds the profiles
// (main, or a test). It records what the factories register and gives it to
// the parts that run it: the accountings and watches to the cluster cache and
// its informers, the routes, metric families and readiness conditions to the
// server, the pod-bound observers to the bind cycle, the background tasks to
// the owner's start/stop sequence.
//
// Lifetime: build the profiles with it, then AttachCluster (when there is a
// cluster connection), StartBackground once the connection has started,
// StopBackground before tearing down the connection; destroy it after the
// server, the bind cycle and the profiles are gone. It keeps alive every
// object it was given.
//
// Thread-safety: registration (the PolicyHandle methods) and AttachCluster
// from one thread before the server starts; after that only the const
// accessors, Snapshot(), WriteMetrics, NotReady and NotifyPodBound, from any
// thread.
#ifndef SCHEDEXT_POLICY_POLICY_HOST_H_
#define SCHEDEXT_POLICY_POLICY_HOST_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/policy/handle.h"

namespace schedext::policy {

class PolicyHost final : public PolicyHandle {
 public:
  struct WatchEntry {
    WatchSpec spec;
    std::shared_ptr<WatchHandler> handler;
  };
  struct Route {
    std::string path;
    GetRouteHandler handler;
  };
  struct Readiness {
    std::string name;
    std::function<bool()> ready;
  };

  PolicyHost();
  ~PolicyHost() override;  // StopBackground()s

  // ---- PolicyHandle ----
  std::shared_ptr<const ClusterView> Snapshot() const override;
  StatusOr<NodeStateSlot> AddNodeAccounting(
      std::shared_ptr<const NodeAccounting> accounting) override;
  Status Watch(WatchSpec spec, std::shared_ptr<WatchHandler> handler) override;
  std::optional<size_t> AddNodeSummarizer(size_t size, size_t alignment,
                                          std::shared_ptr<const NodeSummarizer> summarizer) override;
  size_t NodeSummaryBytesUsed() const override { return summary_bytes_; }
  Status AddGetRoute(std::string path, GetRouteHandler handler) override;
  void AddMetrics(MetricsWriter writer) override;
  void AddReadiness(std::string name, std::function<bool()> ready) override;
  void AddBackgroundTask(std::unique_ptr<BackgroundTask> task) override;
  void OnPodBound(PodBoundObserver observer) override;
  void RequireCluster(std::string reason) override;

  // ---- for the owner ----

  // Where Snapshot() reads from; `snapshot` must stay callable as long as
  // the host (main: the cache's snapshot()).
  void AttachCluster(std::function<std::shared_ptr<const ClusterView>()> snapshot);

  // By slot (index = NodeStateSlot).
  const std::vector<std::shared_ptr<const NodeAccounting>>& accountings() const {
    return accountings_;
  }
  // In registration order (CacheOptions::summaries).
  const std::vector<NodeSummaryRegistration>& summaries() const { return summaries_; }
  const std::vector<WatchEntry>& watches() const { return watches_; }
  const std::vector<Route>& routes() const { return routes_; }
  // Why schedext cannot run without a cluster connection, one entry per
  // policy that said so; empty when it can.
  const std::vector<std::string>& cluster_requirements() const { return cluster_requirements_; }
  bool has_metrics() const { return !metrics_.empty(); }

  // Appends every registered metric family.
  void WriteMetrics(std::string& out) const;
  // "" when every readiness condition holds, else the name of the first that
  // does not.
  std::string NotReady() const;
  // Starts the background tasks in registration order; on a failure stops
  // those already started and returns it, naming the task.
  Status StartBackground();
  // Stops every task (reverse order). Idempotent.
  void StopBackground();
  // Calls every pod-bound observer.
  void NotifyPodBound(const model::PodInfo& pod, std::string_view node) const;

 protected:
  std::shared_ptr<void> FindShared(std::string_view key) const override;
  void KeepShared(std::string key, std::shared_ptr<void> object) override;

 private:
  std::function<std::shared_ptr<const ClusterView>()> snapshot_;
  std::vector<std::shared_ptr<const NodeAccounting>> accountings_;
  std::vector<NodeSummaryRegistration> summaries_;
  size_t summary_bytes_ = 0;
  std::vector<WatchEntry> watches_;
  std::vector<Route> routes_;
  std::vector<MetricsWriter> metrics_;
  std::vector<Readiness> readiness_;
  std::vector<std::unique_ptr<BackgroundTask>> tasks_;
  size_t started_ = 0;  // tasks_[0, started_) are running
  std::vector<PodBoundObserver> bound_observers_;
  std::vector<std::string> cluster_requirements_;
  std::map<std::string, std::shared_ptr<void>, std::less<>> shared_;
};

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_POLICY_HOST_H_
