// ClusterConnection: schedext's link to the Kubernetes API, built from
// cluster: in the configuration — the API client, the cluster cache, its
// informers (nodes, pods and one per policy watch, PolicyHost::watches), the
// binder, and with cluster.leaderElection the elector and its own client.
//
// Lifecycle (the composition root, main.cc, drives it): Connect() builds
// everything without contacting the API; Start() starts the informers;
// MaybeStartElection() and Housekeep() run from the supervisor's thread,
// about once a second; StopServing() when a shutdown signal arrives (new
// verbs are refused while admitted ones drain); Stop() at exit stops the
// elector (releasing the lease) and the informers. The destructor Stop()s.
//
// Thread-safety: Ready() and the accessors may be called from any thread
// once Connect returned; Start, Stop and StopServing from the main or the
// supervisor's thread; MaybeStartElection and Housekeep from one thread only.
#ifndef SCHEDEXT_CLUSTER_CONNECTION_H_
#define SCHEDEXT_CLUSTER_CONNECTION_H_

#include <memory>
#include <string>
#include <vector>

#include "schedext/cluster/cache.h"
#include "schedext/cluster/event_recorder.h"
#include "schedext/cluster/informer.h"
#include "schedext/cluster/kube_binder.h"
#include "schedext/cluster/kube_client.h"
#include "schedext/cluster/leader_election.h"
#include "schedext/config/config.h"
#include "schedext/model/name_table.h"
#include "schedext/policy/policy_host.h"
#include "schedext/status.h"

namespace schedext::cluster {

class ClusterConnection {
 public:
  // Connects as `config.mode` says: nullptr (and OK) when "disabled", or in
  // "auto" mode when no kubeconfig, $KUBECONFIG or in-cluster account is
  // found — unless a policy requires the cluster
  // (PolicyHost::cluster_requirements) or leader election is on, which are
  // kFailedPrecondition / the resolver's error. The policies' accountings,
  // summaries and watches go to the cache and its informers; `names` are the
  // policies' frozen interned names (CacheOptions::names). `host` must
  // outlive the connection.
  static StatusOr<std::unique_ptr<ClusterConnection>> Connect(
      const config::ClusterConfig& config, const policy::PolicyHost& host,
      std::shared_ptr<const model::NameTable> names);

  ~ClusterConnection();
  ClusterConnection(const ClusterConnection&) = delete;
  ClusterConnection& operator=(const ClusterConnection&) = delete;

  ClusterCache& cache() { return *cache_; }
  const ClusterCache& cache() const { return *cache_; }
  KubeBinder& binder() { return *binder_; }
  // Null without cluster.leaderElection.
  const LeaderElector* elector() const { return elector_.get(); }
  // The pending-pod events' recorder, over an API client of its own
  // (cluster.events.qps); null when cluster.events.enabled is false. One
  // thread uses it (explain/'s PendingEventWriter).
  EventRecorder* events() { return events_.get(); }
  // "kubeconfig /path (https://host:6443)", for the startup log.
  const std::string& source() const { return source_; }
  // "nodes, pods, configmaps in kube-system": what the informers watch.
  std::string WatchedList() const;

  // /readyz's cluster part: the cache synced and, unless
  // cluster.readyDuringRelist, no informer relisting.
  bool Ready() const;

  void Start();
  // Campaigns for the lease once Ready(), so a restarted replica never takes
  // the lease from under a synced follower only to be unready. No-op without
  // leader election or once started.
  void MaybeStartElection();
  // Expires the reservations the watch never confirmed; with `summary`, logs
  // one line on the cache and every informer.
  void Housekeep(bool summary);
  // A shutdown began: refuse new verbs; the lease is kept (renewed) while the
  // admitted requests drain, and released by Stop().
  void StopServing();
  void Stop();

 private:
  ClusterConnection() = default;

  std::unique_ptr<KubeClient> client_;
  std::unique_ptr<ClusterCache> cache_;
  std::unique_ptr<Informer> nodes_;
  std::unique_ptr<Informer> pods_;
  // One per PolicyHost::watches() entry, in that order, and their log names.
  std::vector<std::unique_ptr<Informer>> watches_;
  std::vector<std::string> watch_names_;
  std::unique_ptr<KubeBinder> binder_;
  // With cluster.leaderElection: the elector and its own API client (its own
  // short timeout and rate limit, so binds never delay a renewal).
  std::unique_ptr<KubeClient> election_client_;
  std::unique_ptr<LeaderElector> elector_;
  bool election_started_ = false;  // MaybeStartElection's thread only
  std::unique_ptr<KubeClient> events_client_;
  std::unique_ptr<EventRecorder> events_;
  std::string source_;
  bool ready_during_relist_ = false;
};

}  // namespace schedext::cluster

#endif  // SCHEDEXT_CLUSTER_CONNECTION_H_
