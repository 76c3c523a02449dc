// ClusterConnection: builds and runs the API client, cache, informers, binder
// and elector. See connection.h.
#include "schedext/cluster/connection.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <utility>

#include <unistd.h>

#include "schedext/cluster/client_config.h"
#include "schedext/cluster/http_kube_client.h"
#include "schedext/cluster/resource_path.h"

namespace schedext::cluster {
namespace {

std::string HostName() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    return "schedext";
  }
  return host;
}

}  // namespace

StatusOr<std::unique_ptr<ClusterConnection>> ClusterConnection::Connect(
    const config::ClusterConfig& c, const policy::PolicyHost& host,
    std::shared_ptr<const model::NameTable> names) {
  const std::string needs_cluster =
      host.cluster_requirements().empty() ? std::string() : host.cluster_requirements().front();
  if (c.mode == "disabled" && c.leader_election.enabled) {
    return FailedPreconditionError(
        "cluster: mode disabled: cluster.leaderElection needs the Kubernetes API (its Lease)");
  }
  if (c.mode == "disabled") {
    if (!needs_cluster.empty()) {
      return FailedPreconditionError("cluster: mode disabled: " + needs_cluster);
    }
    return std::unique_ptr<ClusterConnection>();
  }
  auto client_config = ResolveClientConfig(c.kubeconfig, c.context);
  if (!client_config.ok()) {
    if (client_config.status().code() == StatusCode::kNotFound && c.mode == "auto") {
      if (c.leader_election.enabled) {
        return client_config.status().WithContext(
            "cluster: cluster.leaderElection needs the Kubernetes API; give --kubeconfig, "
            "$KUBECONFIG or run in-cluster");
      }
      if (needs_cluster.empty()) {
        return std::unique_ptr<ClusterConnection>();
      }
      return client_config.status().WithContext(
          "cluster: " + needs_cluster + "; give --kubeconfig, $KUBECONFIG or run in-cluster");
    }
    return client_config.status().WithContext("cluster");
  }
  client_config->qps = c.qps;
  client_config->burst = c.burst;
  client_config->timeout = std::chrono::seconds(c.timeout_seconds);
  std::unique_ptr<ClusterConnection> connection(new ClusterConnection());
  connection->ready_during_relist_ = c.ready_during_relist;
  connection->source_ = client_config->source + " (" + client_config->server + ")";
  auto client = NewHttpKubeClient(*client_config);
  if (!client.ok()) {
    return client.status().WithContext("cluster");
  }
  connection->client_ = std::move(client).value();
  if (const config::LeaderElectionConfig& le = c.leader_election; le.enabled) {
    LeaderElectionOptions options;
    const char* pod_namespace = std::getenv("POD_NAMESPACE");
    options.lease_namespace = le.lease_namespace.empty() ? DefaultLeaseNamespace(pod_namespace)
                                                         : le.lease_namespace;
    options.lease_name = le.lease_name;
    options.identity = le.identity.empty() ? DefaultLeaderIdentity() : le.identity;
    options.lease_duration = std::chrono::seconds(le.lease_duration_seconds);
    options.renew_deadline = std::chrono::seconds(le.renew_deadline_seconds);
    options.retry_period = std::chrono::seconds(le.retry_period_seconds);
    if (Status s = ValidateLeaderElectionOptions(options); !s.ok()) {
      return s.WithContext("cluster");
    }
    // A renewal must be able to fail and be retried within renewDeadline; the
    // serving deadline itself never waits for a request (leader_election.h).
    ClientConfig election_config = *client_config;
    election_config.timeout = std::min<std::chrono::milliseconds>(
        client_config->timeout,
        std::max<std::chrono::milliseconds>(std::chrono::seconds(1), options.renew_deadline / 2));
    auto election_client = NewHttpKubeClient(election_config);
    if (!election_client.ok()) {
      return election_client.status().WithContext("cluster: leader election");
    }
    connection->election_client_ = std::move(election_client).value();
    connection->elector_ =
        std::make_unique<LeaderElector>(*connection->election_client_, std::move(options));
  }
  if (const config::EventsConfig& ev = c.events; ev.enabled) {
    ClientConfig events_config = *client_config;
    events_config.qps = ev.qps;
    events_config.burst = ev.burst;
    auto events_client = NewHttpKubeClient(events_config);
    if (!events_client.ok()) {
      return events_client.status().WithContext("cluster: events");
    }
    connection->events_client_ = std::move(events_client).value();
    EventRecorderOptions options;
    // The downward API's pod name where deploy/ sets it, else the host name
    // (a pod's host name is its name).
    const char* pod_name = std::getenv("POD_NAME");
    options.reporting_instance = pod_name != nullptr && *pod_name != '\0' ? pod_name : HostName();
    options.update_interval = std::chrono::seconds(ev.update_interval_seconds);
    options.series_window = std::chrono::seconds(ev.series_window_seconds);
    options.max_pods = static_cast<size_t>(ev.max_pods);
    connection->events_ =
        std::make_unique<EventRecorder>(*connection->events_client_, std::move(options));
  }
  CacheOptions cache_options;
  cache_options.assume_ttl = std::chrono::seconds(c.assume_ttl_seconds);
  cache_options.accountings = host.accountings();
  cache_options.summaries = host.summaries();
  cache_options.names = std::move(names);
  for (const policy::PolicyHost::WatchEntry& watch : host.watches()) {
    cache_options.watches.push_back(watch.handler);
  }
  connection->cache_ = std::make_unique<ClusterCache>(cache_options);
  InformerOptions nodes;
  nodes.kind = ResourceKind::kNodes;
  nodes.page_size = c.page_size;
  InformerOptions pods = nodes;
  pods.kind = ResourceKind::kPods;
  connection->nodes_ =
      std::make_unique<Informer>(*connection->client_, *connection->cache_, nodes);
  connection->pods_ = std::make_unique<Informer>(*connection->client_, *connection->cache_, pods);
  for (size_t i = 0; i < host.watches().size(); ++i) {
    const policy::WatchSpec& spec = host.watches()[i].spec;
    connection->watches_.push_back(std::make_unique<Informer>(
        *connection->client_, connection->cache_->WatchFeed(i), WatchInformerOptions(spec, nodes)));
    connection->watch_names_.push_back(WatchName(spec));
  }
  connection->binder_ = std::make_unique<KubeBinder>(*connection->client_);
  return connection;
}

ClusterConnection::~ClusterConnection() { Stop(); }

std::string ClusterConnection::WatchedList() const {
  std::string watched = "nodes, pods";
  for (const std::string& name : watch_names_) {
    watched += ", " + name;
  }
  return watched;
}

bool ClusterConnection::Ready() const {
  if (!cache_->Synced()) {
    return false;
  }
  if (ready_during_relist_) {
    return true;
  }
  if (nodes_->Relisting() || pods_->Relisting()) {
    return false;
  }
  for (const auto& watch : watches_) {
    if (watch->Relisting()) {
      return false;
    }
  }
  return true;
}

void ClusterConnection::Start() {
  nodes_->Start();
  pods_->Start();
  for (const auto& watch : watches_) {
    watch->Start();
  }
}

void ClusterConnection::MaybeStartElection() {
  if (elector_ && !election_started_ && Ready()) {
    election_started_ = true;
    spdlog::info("leader election: cache synced; campaigning for lease {}/{} as {}",
                 elector_->options().lease_namespace, elector_->options().lease_name,
                 elector_->options().identity);
    elector_->Start();
  }
}

void ClusterConnection::Housekeep(bool summary) {
  const size_t expired = cache_->ExpireAssumed();
  if (expired > 0) {
    spdlog::warn("{} reservation(s) expired without the watch confirming the bind", expired);
  }
  if (!summary) {
    return;
  }
  const CacheStats stats = cache_->Stats();
  const InformerStats nodes = nodes_->Stats();
  const InformerStats pods = pods_->Stats();
  std::string watches;
  for (size_t i = 0; i < watches_.size(); ++i) {
    const InformerStats w = watches_[i]->Stats();
    watches += fmt::format("; {} watch: synced={} relisting={} events={} failures={}",
                           watch_names_[i], w.synced, w.relisting, w.events, w.failures);
  }
  spdlog::info(
      "cluster cache: {} nodes, {} pods, {} assumed; node watch: synced={} relisting={} "
      "events={} failures={}; pod watch: synced={} relisting={} events={} failures={}{}",
      stats.nodes, stats.pods, stats.assumed, nodes.synced, nodes.relisting, nodes.events,
      nodes.failures, pods.synced, pods.relisting, pods.events, pods.failures, watches);
}

void ClusterConnection::StopServing() {
  if (elector_) {
    elector_->StopServing();
  }
}

void ClusterConnection::Stop() {
  if (elector_) {
    elector_->Stop();  // releases the lease once the requests have drained
  }
  // Null members: Connect failed before building them.
  if (nodes_) {
    nodes_->Stop();
  }
  if (pods_) {
    pods_->Stop();
  }
  for (const auto& watch : watches_) {
    watch->Stop();
  }
}

}  // namespace schedext::cluster
