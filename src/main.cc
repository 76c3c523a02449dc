// schedext: the composition root. Parses flags, loads the configuration, builds
// the profiles and the server, and runs until SIGTERM/SIGINT.
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "schedext/cli/commands.h"
#include "schedext/cluster/cache.h"
#include "schedext/explain/explain.h"
#include "schedext/cluster/client_config.h"
#include "schedext/cluster/http_kube_client.h"
#include "schedext/cluster/informer.h"
#include "schedext/cluster/kube_binder.h"
#include "schedext/cluster/leader_election.h"
#include "schedext/config/config.h"
#include "schedext/pipeline/profile.h"
#include "schedext/policy/policy_host.h"
#include "schedext/policy/registry.h"
#include "schedext/record/recorder.h"
#include "schedext/server/http_server.h"
#include "schedext/server/metrics.h"
#include "schedext/server/service.h"
#include "schedext/wire/encoder.h"

namespace {

constexpr std::string_view kUsage =
    R"(schedext: a Kubernetes scheduler extender (filter, prioritize, preempt, bind).

Usage: schedext [flags]
       schedext explain --config FILE [flags] REQUEST.json  (see schedext explain --help)
       schedext replay --config FILE [flags] DIR            (see schedext replay --help)
       schedext why [--server URL] NAMESPACE/POD            (see schedext why --help)

Flags:
  --config FILE         configuration file (YAML); without it the embedded default
                        configuration is used (print it with --print-default-config)
  --listen ADDR         listen address, overrides server.listen: HOST:PORT, [V6]:PORT or :PORT
  --log-level LEVEL     trace, debug, info, warn, error, critical or off (overrides log.level)
  --kubeconfig FILE     kubeconfig for the Kubernetes API (overrides cluster.kubeconfig);
                        without it: $KUBECONFIG, then the in-cluster service account
  --context NAME        kubeconfig context (overrides cluster.context)
  --check-config FILE   validate FILE (syntax, fields, policies and their args) and exit:
                        0 when valid, 1 with a message naming the field otherwise
  --print-default-config
                        print the embedded default configuration and exit
  --version             print the version and exit
  --help                print this help and exit
)";

struct Flags {
  std::optional<std::string> config;
  std::optional<std::string> listen;
  std::optional<std::string> log_level;
  std::optional<std::string> kubeconfig;
  std::optional<std::string> context;
  std::optional<std::string> check_config;
  bool print_default_config = false;
  bool version = false;
  bool help = false;
};

// Accepts "--flag value" and "--flag=value".
bool ParseFlags(int argc, char** argv, Flags& flags, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::optional<std::string> inline_value;
    if (const size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto value = [&](std::optional<std::string>& out) {
      if (inline_value) {
        out = *inline_value;
        return true;
      }
      if (i + 1 >= argc) {
        error = arg + " needs a value";
        return false;
      }
      out = argv[++i];
      return true;
    };
    auto no_value = [&](bool& out) {
      if (inline_value) {
        error = arg + " takes no value";
        return false;
      }
      out = true;
      return true;
    };
    bool ok = true;
    if (arg == "--config") {
      ok = value(flags.config);
    } else if (arg == "--listen") {
      ok = value(flags.listen);
    } else if (arg == "--log-level") {
      ok = value(flags.log_level);
    } else if (arg == "--kubeconfig") {
      ok = value(flags.kubeconfig);
    } else if (arg == "--context") {
      ok = value(flags.context);
    } else if (arg == "--check-config") {
      ok = value(flags.check_config);
    } else if (arg == "--print-default-config") {
      ok = no_value(flags.print_default_config);
    } else if (arg == "--version") {
      ok = no_value(flags.version);
    } else if (arg == "--help" || arg == "-h") {
      ok = no_value(flags.help);
    } else {
      error = "unknown flag " + arg;
      ok = false;
    }
    if (!ok) {
      return false;
    }
  }
  return true;
}

// %* in a JSON log pattern: the message, escaped as a JSON string body.
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string quoted;
    schedext::wire::AppendJsonString(std::string_view(msg.payload.data(), msg.payload.size()),
                                     quoted);
    dest.append(quoted.data() + 1, quoted.data() + quoted.size() - 1);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMessageFlag>();
  }
};

schedext::Status SetUpLogging(const schedext::config::LogConfig& log) {
  const spdlog::level::level_enum level = spdlog::level::from_str(log.level);
  if (level == spdlog::level::off && log.level != "off") {
    return schedext::InvalidArgumentError("log level \"" + log.level +
                                          "\": use trace, debug, info, warn, error, critical "
                                          "or off");
  }
  auto logger = spdlog::stderr_color_mt("schedext");
  if (log.format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<JsonMessageFlag>('*').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","msg":"%*"})");
    logger->set_formatter(std::move(formatter));
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%f%z %^%l%$ %v");
  }
  logger->set_level(level);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return schedext::OkStatus();
}

struct Built {
  std::vector<std::shared_ptr<const schedext::pipeline::Profile>> profiles;
  size_t default_profile = 0;
  // What the policies interned, frozen; shared with the cache.
  std::shared_ptr<schedext::model::NameTable> names;
};

// `host` receives what the policies register (routes, metrics, watches, ...).
schedext::StatusOr<Built> BuildProfiles(const schedext::config::Config& config,
                                        schedext::policy::PolicyHost& host) {
  schedext::policy::Registry registry;
  SCHEDEXT_RETURN_IF_ERROR(schedext::policy::RegisterBuiltinPolicies(registry));
  Built built;
  built.names = std::make_shared<schedext::model::NameTable>();
  for (size_t i = 0; i < config.profiles.size(); ++i) {
    auto profile = schedext::pipeline::Profile::Build(
        config.profiles[i], registry, "profiles[" + std::to_string(i) + "]", &host, built.names);
    if (!profile.ok()) {
      return profile.status();
    }
    if (config.profiles[i].name == config.default_profile) {
      built.default_profile = i;
    }
    built.profiles.push_back(std::move(profile).value());
  }
  built.names->Freeze();
  return built;
}

int CheckConfig(const std::string& path) {
  auto config = schedext::config::LoadConfigFile(path);
  if (config.ok()) {
    schedext::policy::PolicyHost host;
    auto built = BuildProfiles(*config, host);
    if (!built.ok()) {
      std::cerr << path << ": " << built.status().message() << "\n";
      return 1;
    }
    if (config->cluster.mode == "disabled" && !host.cluster_requirements().empty()) {
      std::cerr << path << ": cluster.mode: \"disabled\", but "
                << host.cluster_requirements().front() << "\n";
      return 1;
    }
    std::cout << path << ": ok (" << config->profiles.size() << " profile(s))\n";
    return 0;
  }
  std::cerr << config.status().message() << "\n";
  return 1;
}


// The Kubernetes API connection: client, cache, informers (nodes, pods and
// the policies' extra watches) and binder.
struct ClusterConnection {
  std::unique_ptr<schedext::cluster::KubeClient> client;
  std::unique_ptr<schedext::cluster::ClusterCache> cache;
  std::unique_ptr<schedext::cluster::Informer> nodes;
  std::unique_ptr<schedext::cluster::Informer> pods;
  // One per PolicyHost::watches() entry, in that order.
  std::vector<std::unique_ptr<schedext::cluster::Informer>> watches;
  std::vector<std::string> watch_names;  // "configmaps in kube-system", for logs
  std::unique_ptr<schedext::cluster::KubeBinder> binder;
  // With cluster.leaderElection: the elector and its own API client (its own
  // short timeout and rate limit, so binds never delay a renewal).
  std::unique_ptr<schedext::cluster::KubeClient> election_client;
  std::unique_ptr<schedext::cluster::LeaderElector> elector;
  bool election_started = false;  // the supervisor thread's
  std::string source;

  bool ready_during_relist = false;

  bool Ready() const {
    if (!cache->Synced()) {
      return false;
    }
    if (ready_during_relist) {
      return true;
    }
    if (nodes->Relisting() || pods->Relisting()) {
      return false;
    }
    for (const auto& watch : watches) {
      if (watch->Relisting()) {
        return false;
      }
    }
    return true;
  }
  void Start() {
    nodes->Start();
    pods->Start();
    for (const auto& watch : watches) {
      watch->Start();
    }
  }
  // Campaigns only once the cache has synced, so a restarted replica never
  // takes the lease from under a synced follower only to be unready.
  void MaybeStartElection() {
    if (elector && !election_started && Ready()) {
      election_started = true;
      spdlog::info("leader election: cache synced; campaigning for lease {}/{} as {}",
                   elector->options().lease_namespace, elector->options().lease_name,
                   elector->options().identity);
      elector->Start();
    }
  }
  void Stop() {
    if (elector) {
      elector->Stop();  // releases the lease once the requests have drained
    }
    nodes->Stop();
    pods->Stop();
    for (const auto& watch : watches) {
      watch->Stop();
    }
  }
};

// "configmaps in kube-system" (all namespaces: "configmaps").
std::string WatchName(const schedext::policy::WatchSpec& spec) {
  std::string name = "configmaps";
  if (!spec.namespace_name.empty()) {
    name += " in " + spec.namespace_name;
  }
  return name;
}

// "a%3Db": a selector as a query parameter value.
std::string QueryEscape(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
    }
  }
  return out;
}

// Connects as cluster.mode says: nullptr (and OK) when there is nothing to
// connect to in "auto" mode or when "disabled" — unless a policy requires the
// cluster (PolicyHost::cluster_requirements). The policies' accountings and
// watches go to the cache and its informers.
schedext::StatusOr<std::unique_ptr<ClusterConnection>> ConnectCluster(
    const schedext::config::ClusterConfig& c, const schedext::policy::PolicyHost& host,
    std::shared_ptr<const schedext::model::NameTable> names) {
  const std::string needs_cluster =
      host.cluster_requirements().empty() ? std::string() : host.cluster_requirements().front();
  if (c.mode == "disabled" && c.leader_election.enabled) {
    return schedext::FailedPreconditionError(
        "cluster: mode disabled: cluster.leaderElection needs the Kubernetes API (its Lease)");
  }
  if (c.mode == "disabled") {
    if (!needs_cluster.empty()) {
      return schedext::FailedPreconditionError("cluster: mode disabled: " + needs_cluster);
    }
    return std::unique_ptr<ClusterConnection>();
  }
  auto client_config = schedext::cluster::ResolveClientConfig(c.kubeconfig, c.context);
  if (!client_config.ok()) {
    if (client_config.status().code() == schedext::StatusCode::kNotFound && c.mode == "auto") {
      if (c.leader_election.enabled) {
        return client_config.status().WithContext(
            "cluster: cluster.leaderElection needs the Kubernetes API; give --kubeconfig, "
            "$KUBECONFIG or run in-cluster");
      }
      if (needs_cluster.empty()) {
        return std::unique_ptr<ClusterConnection>();
      }
      return client_config.status().WithContext(
          "cluster: " + needs_cluster +
          "; give --kubeconfig, $KUBECONFIG or run in-cluster");
    }
    return client_config.status().WithContext("cluster");
  }
  client_config->qps = c.qps;
  client_config->burst = c.burst;
  client_config->timeout = std::chrono::seconds(c.timeout_seconds);
  auto connection = std::make_unique<ClusterConnection>();
  connection->ready_during_relist = c.ready_during_relist;
  connection->source = client_config->source + " (" + client_config->server + ")";
  auto client = schedext::cluster::NewHttpKubeClient(*client_config);
  if (!client.ok()) {
    return client.status().WithContext("cluster");
  }
  connection->client = std::move(client).value();
  if (const schedext::config::LeaderElectionConfig& le = c.leader_election; le.enabled) {
    schedext::cluster::LeaderElectionOptions options;
    const char* pod_namespace = std::getenv("POD_NAMESPACE");
    options.lease_namespace = le.lease_namespace.empty()
                                  ? schedext::cluster::DefaultLeaseNamespace(pod_namespace)
                                  : le.lease_namespace;
    options.lease_name = le.lease_name;
    options.identity =
        le.identity.empty() ? schedext::cluster::DefaultLeaderIdentity() : le.identity;
    options.lease_duration = std::chrono::seconds(le.lease_duration_seconds);
    options.renew_deadline = std::chrono::seconds(le.renew_deadline_seconds);
    options.retry_period = std::chrono::seconds(le.retry_period_seconds);
    if (schedext::Status s = schedext::cluster::ValidateLeaderElectionOptions(options); !s.ok()) {
      return s.WithContext("cluster");
    }
    // A renewal must be able to fail and be retried within renewDeadline; the
    // serving deadline itself never waits for a request (leader_election.h).
    schedext::cluster::ClientConfig election_config = *client_config;
    election_config.timeout = std::min<std::chrono::milliseconds>(
        client_config->timeout,
        std::max<std::chrono::milliseconds>(std::chrono::seconds(1), options.renew_deadline / 2));
    auto election_client = schedext::cluster::NewHttpKubeClient(election_config);
    if (!election_client.ok()) {
      return election_client.status().WithContext("cluster: leader election");
    }
    connection->election_client = std::move(election_client).value();
    connection->elector = std::make_unique<schedext::cluster::LeaderElector>(
        *connection->election_client, std::move(options));
  }
  schedext::cluster::CacheOptions cache_options;
  cache_options.assume_ttl = std::chrono::seconds(c.assume_ttl_seconds);
  cache_options.accountings = host.accountings();
  cache_options.summaries = host.summaries();
  cache_options.names = std::move(names);
  for (const schedext::policy::PolicyHost::WatchEntry& watch : host.watches()) {
    cache_options.watches.push_back(watch.handler);
  }
  connection->cache = std::make_unique<schedext::cluster::ClusterCache>(cache_options);
  schedext::cluster::InformerOptions nodes;
  nodes.kind = schedext::cluster::ResourceKind::kNodes;
  nodes.page_size = c.page_size;
  schedext::cluster::InformerOptions pods = nodes;
  pods.kind = schedext::cluster::ResourceKind::kPods;
  connection->nodes = std::make_unique<schedext::cluster::Informer>(*connection->client,
                                                                    *connection->cache, nodes);
  connection->pods = std::make_unique<schedext::cluster::Informer>(*connection->client,
                                                                   *connection->cache, pods);
  for (size_t i = 0; i < host.watches().size(); ++i) {
    const schedext::policy::WatchSpec& spec = host.watches()[i].spec;
    schedext::cluster::InformerOptions watch = nodes;
    watch.kind = schedext::cluster::ResourceKind::kConfigMaps;
    watch.path = spec.namespace_name.empty()
                     ? "/api/v1/configmaps"
                     : "/api/v1/namespaces/" + spec.namespace_name + "/configmaps";
    std::string query;
    if (!spec.label_selector.empty()) {
      query = "labelSelector=" + QueryEscape(spec.label_selector);
    }
    if (!spec.field_selector.empty()) {
      query += (query.empty() ? "" : "&") + std::string("fieldSelector=") +
               QueryEscape(spec.field_selector);
    }
    watch.extra_query = std::move(query);
    connection->watches.push_back(std::make_unique<schedext::cluster::Informer>(
        *connection->client, connection->cache->WatchFeed(i), watch));
    connection->watch_names.push_back(WatchName(spec));
  }
  connection->binder = std::make_unique<schedext::cluster::KubeBinder>(*connection->client);
  return connection;
}

// The one thread beside the server's: waits for SIGTERM/SIGINT (blocked in
// every other thread, so only this one sees them), and once a second does the
// cluster housekeeping: expiring reservations the watch never confirmed, and a
// summary of the cluster view in the log every minute. On a signal it stops
// the server; if in-flight requests have not drained within the grace period,
// it exits the process.
class Supervisor {
 public:
  Supervisor(schedext::server::HttpServer& server, int grace_seconds, ClusterConnection* cluster)
      : server_(server),
        grace_seconds_(grace_seconds),
        cluster_(cluster),
        thread_([this] { Run(); }) {}
  ~Supervisor() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void Run() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    const timespec tick{0, 200'000'000};
    auto next_housekeeping = std::chrono::steady_clock::now();
    auto next_summary = next_housekeeping;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (done_) {
          return;
        }
      }
      const int sig = sigtimedwait(&set, nullptr, &tick);
      if (sig == SIGTERM || sig == SIGINT) {
        spdlog::info("received {}: draining in-flight requests",
                     sig == SIGTERM ? "SIGTERM" : "SIGINT");
        if (cluster_ != nullptr && cluster_->elector) {
          // Refuse new verbs now; the lease is kept (renewed) while the
          // admitted requests drain, then released (ClusterConnection::Stop).
          cluster_->elector->StopServing();
        }
        server_.Stop();
        std::unique_lock<std::mutex> lock(mu_);
        if (!cv_.wait_for(lock, std::chrono::seconds(grace_seconds_), [this] { return done_; })) {
          spdlog::error("requests did not drain within {} s; exiting", grace_seconds_);
          spdlog::shutdown();
          std::_Exit(1);
        }
        return;
      }
      const auto now = std::chrono::steady_clock::now();
      if (cluster_ != nullptr) {
        cluster_->MaybeStartElection();
      }
      if (cluster_ != nullptr && now >= next_housekeeping) {
        next_housekeeping = now + std::chrono::seconds(1);
        Housekeep(now >= next_summary);
        if (now >= next_summary) {
          next_summary = now + std::chrono::seconds(60);
        }
      }
    }
  }

  void Housekeep(bool summary) {
    const size_t expired = cluster_->cache->ExpireAssumed();
    if (expired > 0) {
      spdlog::warn("{} reservation(s) expired without the watch confirming the bind", expired);
    }
    if (summary) {
      const auto stats = cluster_->cache->Stats();
      const auto nodes = cluster_->nodes->Stats();
      const auto pods = cluster_->pods->Stats();
      std::string config_maps;
      for (size_t i = 0; i < cluster_->watches.size(); ++i) {
        const auto cm = cluster_->watches[i]->Stats();
        config_maps += fmt::format("; {} watch: synced={} relisting={} events={} failures={}",
                                   cluster_->watch_names[i], cm.synced, cm.relisting, cm.events,
                                   cm.failures);
      }
      spdlog::info(
          "cluster cache: {} nodes, {} pods, {} assumed; node watch: synced={} relisting={} "
          "events={} failures={}; pod watch: synced={} relisting={} events={} failures={}{}",
          stats.nodes, stats.pods, stats.assumed, nodes.synced, nodes.relisting, nodes.events,
          nodes.failures, pods.synced, pods.relisting, pods.events, pods.failures, config_maps);
    }
  }

  schedext::server::HttpServer& server_;
  const int grace_seconds_;
  ClusterConnection* cluster_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

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
  Flags flags;
  std::string error;
  if (!ParseFlags(argc, argv, flags, error)) {
    std::cerr << "schedext: " << error << "\n\n" << kUsage;
    return 2;
  }
  if (flags.help) {
    std::cout << kUsage;
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
    return CheckConfig(*flags.check_config);
  }

  auto loaded = flags.config
                    ? schedext::config::LoadConfigFile(*flags.config)
                    : schedext::config::LoadConfigText(schedext::config::EmbeddedDefaultConfig(),
                                                       "embedded default config");
  if (!loaded.ok()) {
    std::cerr << "schedext: " << loaded.status().message() << "\n";
    return 1;
  }
  schedext::config::Config config = std::move(loaded).value();
  if (flags.listen) {
    schedext::Status s = schedext::config::ApplyListenAddress(*flags.listen, config.server);
    if (!s.ok()) {
      std::cerr << "schedext: --listen: " << s.message() << "\n";
      return 1;
    }
  }
  if (flags.log_level) {
    config.log.level = *flags.log_level;
  }
  if (flags.kubeconfig) {
    config.cluster.kubeconfig = *flags.kubeconfig;
    if (config.cluster.mode == "disabled") {
      config.cluster.mode = "required";
    }
  }
  if (flags.context) {
    config.cluster.context = *flags.context;
  }
  if (schedext::Status s = SetUpLogging(config.log); !s.ok()) {
    std::cerr << "schedext: " << s.message() << "\n";
    return 1;
  }
  // Declared before everything the policies' registrations reach (profiles,
  // cache, service, server), so it outlives them all.
  schedext::policy::PolicyHost host;
  auto built = BuildProfiles(config, host);
  if (!built.ok()) {
    spdlog::critical("{}", built.status().message());
    return 1;
  }

  // Block the signals before any thread starts, so that every thread inherits
  // the mask and only the watcher receives them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto cluster = ConnectCluster(config.cluster, host, built->names);
  if (!cluster.ok()) {
    spdlog::critical("{}", cluster.status().message());
    return 1;
  }
  std::unique_ptr<ClusterConnection> connection = std::move(cluster).value();
  if (connection == nullptr && !host.cluster_requirements().empty()) {
    spdlog::critical("cluster: no Kubernetes API connection (cluster.mode {}), but {}",
                     config.cluster.mode, host.cluster_requirements().front());
    return 1;
  }
  if (connection != nullptr) {
    const schedext::cluster::ClusterCache* cache = connection->cache.get();
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
      connection ? connection->cache.get() : nullptr,
      connection ? connection->binder.get() : nullptr, &metrics,
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
    ClusterConnection* c = connection.get();
    options.ready = [c, &host] { return c->Ready() && host.NotReady().empty(); };
    metrics.SetCacheSynced([c] { return c->cache->Synced(); });
    if (const schedext::cluster::LeaderElector* e = c->elector.get()) {
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
    const schedext::cluster::ClusterCache* cache = connection->cache.get();
    options.get_routes.push_back(
        {"/explain/pod", [cache, &built](std::string_view rest, std::string& body) {
           return schedext::explain::ExplainCachedPod(*cache, built->profiles,
                                                      built->default_profile, rest, body);
         }});
  }
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
    service.SetObserver(recorder.get());
    metrics.AddExtra([r = recorder.get()](std::string& out) { r->AppendMetrics(out); });
    spdlog::info("recording to {} (sample rate {}; at most {} files of {} bytes)",
                 config.server.record.dir, config.server.record.sample_rate,
                 config.server.record.max_files, config.server.record.max_bytes);
  }
  schedext::server::HttpServer server(service, &metrics, options);
  if (schedext::Status s = server.Bind(); !s.ok()) {
    spdlog::critical("{}", s.message());
    return 1;
  }
  std::string profile_list;
  for (const std::string& n : names) {
    profile_list += (profile_list.empty() ? "" : ", ") + n;
  }
  spdlog::info("schedext {} listening on {}:{} (profiles: {}; default: {}; {} I/O threads)",
               SCHEDEXT_VERSION, config.server.host, server.port(), profile_list,
               names[built->default_profile],
               config.server.threads > 0 ? std::to_string(config.server.threads)
                                         : std::to_string(std::thread::hardware_concurrency()));
  if (server.status_port() >= 0) {
    spdlog::info("status listener on {}:{} (GET /healthz, /readyz, /version, /metrics)",
                 config.server.status_host, server.status_port());
  }
  if (connection) {
    std::string watched = "nodes, pods";
    for (const std::string& name : connection->watch_names) {
      watched += ", " + name;
    }
    spdlog::info("cluster: {}; watching {} (not ready until each has synced)", connection->source,
                 watched);
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
    Supervisor supervisor(server, config.server.shutdown_grace_seconds, connection.get());
    served = server.Serve();
  }
  host.StopBackground();
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
