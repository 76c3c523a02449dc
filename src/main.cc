// schedext: the composition root. Dispatches the subcommands, parses the
// server flags (cli/server_flags.h), builds the profiles, the cluster
// connection and the server, and runs until SIGTERM/SIGINT.
#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/supervisor.h"
#include "schedext/cli/commands.h"
#include "schedext/cli/server_flags.h"
#include "schedext/cluster/connection.h"
#include "schedext/config/config.h"
#include "schedext/explain/explain.h"
#include "schedext/explain/pending_events.h"
#include "schedext/pipeline/profile_set.h"
#include "schedext/policy/policy_host.h"
#include "schedext/record/recorder.h"
#include "schedext/server/http_server.h"
#include "schedext/server/metrics.h"
#include "schedext/server/service.h"
#include "server/logging.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "explain") {
    // The offline subcommands (src/cli/): no listener, no cluster.
    return schedext::cli::ExplainCommand(std::vector<std::string>(argv + 2, argv + argc),
                                         std::cout, std::cerr);
  }
  if (argc > 1 && std::string_view(argv[1]) == "why") {
    return schedext::cli::WhyCommand(std::vector<std::string>(argv + 2, argv + argc), std::cout,
                                     std::cerr);
  }
  if (argc > 1 && std::string_view(argv[1]) == "replay") {
    return schedext::cli::ReplayCommand(std::vector<std::string>(argv + 2, argv + argc),
                                        std::cout, std::cerr);
  }
  schedext::cli::ServerFlags flags;
  std::string error;
  if (!schedext::cli::ParseServerFlags(argc, argv, flags, error)) {
    std::cerr << "schedext: " << error << "\n\n" << schedext::cli::ServerUsage();
    return 2;
  }
  if (flags.help) {
    std::cout << schedext::cli::ServerUsage();
    return 0;
  }
  if (flags.version) {
    std::cout << "schedext " << SCHEDEXT_VERSION << "\n";
    return 0;
  }
  if (flags.print_default_config) {
    std::cout << schedext::config::EmbeddedDefaultConfig();
    return 0;
  }
  if (flags.check_config) {
    return schedext::cli::CheckConfigCommand(*flags.check_config, std::cout, std::cerr);
  }

  auto loaded = schedext::cli::LoadServerConfig(flags);
  if (!loaded.ok()) {
    std::cerr << "schedext: " << loaded.status().message() << "\n";
    return 1;
  }
  schedext::config::Config config = std::move(loaded).value();
  if (schedext::Status s = schedext::server::SetUpLogging(config.log); !s.ok()) {
    std::cerr << "schedext: " << s.message() << "\n";
    return 1;
  }
  // Declared before everything the policies' registrations reach (profiles,
  // cache, service, server), so it outlives them all.
  schedext::policy::PolicyHost host;
  schedext::policy::Registry registry;
  if (schedext::Status s = schedext::policy::RegisterBuiltinPolicies(registry); !s.ok()) {
    spdlog::critical("{}", s.message());
    return 1;
  }
  auto built = schedext::pipeline::BuildProfileSet(config, registry, &host, /*intern=*/true);
  if (!built.ok()) {
    spdlog::critical("{}", built.status().message());
    return 1;
  }

  // Before any thread starts, so that only the supervisor receives them.
  schedext::BlockShutdownSignals();

  auto cluster = schedext::cluster::ClusterConnection::Connect(config.cluster, host, built->names);
  if (!cluster.ok()) {
    spdlog::critical("{}", cluster.status().message());
    return 1;
  }
  std::unique_ptr<schedext::cluster::ClusterConnection> connection = std::move(cluster).value();
  if (connection == nullptr && !host.cluster_requirements().empty()) {
    spdlog::critical("cluster: no Kubernetes API connection (cluster.mode {}), but {}",
                     config.cluster.mode, host.cluster_requirements().front());
    return 1;
  }
  if (connection != nullptr) {
    const schedext::cluster::ClusterCache* cache = &connection->cache();
    host.AttachCluster(
        [cache]() -> std::shared_ptr<const schedext::policy::ClusterView> {
          return cache->snapshot();
        });
  }

  std::vector<std::string> names;
  for (const auto& p : built->profiles) {
    names.push_back(p->name());
  }
  schedext::server::Metrics metrics(names);
  schedext::server::ExtenderService service(
      built->profiles, built->default_profile,
      connection ? &connection->cache() : nullptr, connection ? &connection->binder() : nullptr,
      &metrics,
      [&host](const schedext::model::PodInfo& pod, std::string_view node) {
        host.NotifyPodBound(pod, node);
      });
  const schedext::explain::ExplainVerb explain_verb;
  service.SetExplain(&explain_verb);
  schedext::server::HttpServerOptions options;
  options.server = config.server;
  options.version = SCHEDEXT_VERSION;
  // /readyz: the cluster view synced and every policy's own condition.
  options.ready = [&host] { return host.NotReady().empty(); };
  if (connection) {
    const schedext::cluster::ClusterConnection* c = connection.get();
    options.ready = [c, &host] { return c->Ready() && host.NotReady().empty(); };
    metrics.SetCacheSynced([c] { return c->cache().Synced(); });
    if (const schedext::cluster::LeaderElector* e = c->elector()) {
      options.not_serving = [e] { return e->IsLeader() ? std::string() : e->FollowerReason(); };
      metrics.SetLeaderElection([e] { return e->IsLeader(); }, [e] { return e->transitions(); });
    }
  }
  if (host.has_metrics()) {
    metrics.SetExtra([&host](std::string& out) { host.WriteMetrics(out); });
  }
  for (const schedext::policy::PolicyHost::Route& route : host.routes()) {
    options.get_routes.push_back({route.path, route.handler});
  }
  if (connection) {
    // A pending pod explained against the live cache (explain/explain.h).
    const schedext::cluster::ClusterCache* cache = &connection->cache();
    options.get_routes.push_back(
        {"/explain/pod", [cache, &built](std::string_view rest, std::string& body) {
           return schedext::explain::ExplainCachedPod(*cache, built->profiles,
                                                      built->default_profile, rest, body);
         }});
  }
  schedext::server::ExchangeObservers observers;
  // server.record: a sample of the traffic to files, for `schedext replay`.
  std::unique_ptr<schedext::record::Recorder> recorder;
  if (config.server.record.enabled()) {
    schedext::record::RecorderOptions record_options;
    record_options.config = config.server.record;
    record_options.accountings = host.accountings();
    auto started = schedext::record::Recorder::Start(std::move(record_options));
    if (!started.ok()) {
      spdlog::critical("{}", started.status().message());
      return 1;
    }
    recorder = std::move(started).value();
    observers.Add(recorder.get());
    metrics.AddExtra([r = recorder.get()](std::string& out) { r->AppendMetrics(out); });
    spdlog::info("recording to {} (sample rate {}; at most {} files of {} bytes)",
                 config.server.record.dir, config.server.record.sample_rate,
                 config.server.record.max_files, config.server.record.max_bytes);
  }
  // cluster.events: SchedextUnschedulable Events on pods no node fits.
  std::unique_ptr<schedext::explain::PendingEventWriter> pending_events =
      schedext::explain::NewPendingEventWriter(config, built->profiles, connection.get());
  if (pending_events) {
    observers.Add(pending_events.get());
    metrics.AddExtra([w = pending_events.get()](std::string& out) { w->AppendMetrics(out); });
    pending_events->Start();  // its thread waits for the first rejected pod
  }
  if (!observers.empty()) {
    service.SetObserver(&observers);
  }
  schedext::server::HttpServer server(service, &metrics, options);
  if (schedext::Status s = server.Bind(); !s.ok()) {
    spdlog::critical("{}", s.message());
    return 1;
  }
  spdlog::info("schedext {} listening on {}:{} (profiles: {}; default: {}; {} I/O threads)",
               SCHEDEXT_VERSION, config.server.host, server.port(), fmt::join(names, ", "),
               names[built->default_profile],
               config.server.threads > 0 ? std::to_string(config.server.threads)
                                         : std::to_string(std::thread::hardware_concurrency()));
  if (server.status_port() >= 0) {
    spdlog::info("status listener on {}:{} (GET /healthz, /readyz, /version, /metrics)",
                 config.server.status_host, server.status_port());
  }
  if (connection) {
    spdlog::info("cluster: {}; watching {} (not ready until each has synced)", connection->source(),
                 connection->WatchedList());
    connection->Start();
  } else {
    spdlog::info("no cluster connection (cluster.mode {}): node-cache requests (NodeNames) and "
                 "bind answer an error; full-node requests are served",
                 config.cluster.mode);
  }

  // The policies' background work (pollers), once the cluster view runs; it
  // stops before the connection does.
  if (schedext::Status s = host.StartBackground(); !s.ok()) {
    spdlog::critical("policy background work: {}", s.message());
    if (connection) {
      connection->Stop();
    }
    return 1;
  }

  schedext::Status served;
  {
    schedext::SupervisorOptions supervision;
    supervision.grace = std::chrono::seconds(config.server.shutdown_grace_seconds);
    schedext::cluster::ClusterConnection* c = connection.get();
    supervision.on_signal = [c, &server] {
      if (c != nullptr) {
        c->StopServing();
      }
      server.Stop();
    };
    if (c != nullptr) {
      supervision.every_tick = [c] { c->MaybeStartElection(); };
      supervision.every_second = [c](bool summary) { c->Housekeep(summary); };
    }
    schedext::Supervisor supervisor(std::move(supervision));
    served = server.Serve();
  }
  host.StopBackground();
  if (pending_events) {
    pending_events->Stop();
  }
  if (connection) {
    connection->Stop();
  }
  if (!served.ok()) {
    spdlog::critical("{}", served.message());
    return 1;
  }
  spdlog::info("stopped");
  spdlog::shutdown();
  return 0;
}
