// schedext-throughput: pods scheduled per second by the real kube-scheduler
// with schedext in the loop, against the real kube-apiserver (issue 36), in
// the spirit of kube-scheduler's scheduler_perf. Loopback only; every process
// it starts (etcd, kube-apiserver, kube-scheduler, schedext) is stopped by its
// PID, and every wait is bounded.
//
//   schedext-throughput [--nodes 5000] [--pods 1000] [--rounds 2]
//                       [--limits shipped,lifted]
//                       [--configs none,decide,bind,gpu,none-all,decide-all]
//                       (also gpu-none, gpu-decide) [--clients 8] [--churn 0]
//                       [--run-timeout 300] [--schedext BINARY]
//                       [--go-baseline BINARY] (adds configuration go)
//
// The nodes (8 cpu, 32 Gi, 110 pods, and 4 GPUs of 16 GiB as the gpushare
// device plugin advertises them) are created once. Then, for each client
// limit setting (schedext restarted with it) and each round, every
// configuration runs in turn with a fresh kube-scheduler:
//   none    no extender (deploy/'s node-cache scheduler config without it)
//   decide  schedext node-cache filter + prioritize, the scheduler binds
//   bind    the same, schedext binds (bindVerb)
//   gpu     GpuShare (deploy/'s gpushare scheduler config), schedext binds;
//           the pods ask for 1 GiB of aliyun.com/gpu-mem
//   gpu-none, gpu-decide   the same GPU pods and scheduler config without
//           the extender, and with it deciding while the scheduler binds:
//           what GPU pods cost the scheduler itself, and what schedext's
//           bind adds to its decision
//   none-all, decide-all   none and decide with percentageOfNodesToScore:
//           100 (every feasible node scored, every node name sent to schedext)
//   go      bench/go-baseline (a typical Go extender: encoding/json, net/http)
//           in schedext's place as in decide, node-cache, its node map loaded
//           once from the API server's node list; needs --go-baseline
// A run creates --pods pods at once from --clients connections into a fresh
// namespace and watches until every one has a nodeName. Limits: "shipped" is
// deploy/'s files as they are (kube-scheduler's clientConnection defaults,
// qps 50 / burst 100; schedext's cluster.qps/burst from
// deploy/gpushare/schedext.yaml); "lifted" sets both clients to 5,000/5,000.
//
// Prints one markdown table per limit setting: pods/s (first create to last
// bound), create->bound p50/p99, the CPU time kube-scheduler and the
// extender (schedext, or go-baseline in "go") spent per pod over the burst,
// schedext's bind errors, its 503s (binds refused by server.maxPendingBinds),
// the scheduler's extender timeouts and FailedScheduling events, and pods/s
// over "none" ("none-all" for the -all configurations, "gpu-none" for the gpu
// ones when it runs) of the same round. Exits 1 when a pod was left unbound or
// a run failed; 77 (skipped) without the control-plane binaries, unless
// CI=true.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "control_plane/scheduler_e2e.h"
#include "prod_bench/cluster.h"
#include "prod_bench/measure.h"
#include "prod_bench/processes.h"
#include "schedext/cluster/http_kube_client.h"
#include "testing/control_plane.h"

namespace schedext::bench {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::ControlPlane;
namespace e2e = testing::e2e;

struct Options {
  int nodes = 5000;
  int pods = 1000;
  int rounds = 2;
  int clients = 8;
  int run_timeout_seconds = 300;
  std::string schedext_binary;  // empty: the one built with this benchmark
  std::string go_baseline;      // bench/go-baseline's binary, for configuration "go"
  std::vector<std::string> limits = {"shipped", "lifted"};
  std::vector<std::string> configs = {"none", "decide", "bind", "gpu", "none-all", "decide-all"};
  // Watch churn during each burst, writes/s (0: none): prod_bench's Churn.
  double churn = 0;
};

constexpr std::string_view kEveryNodeSuffix = "-all";

bool ScoresEveryNode(std::string_view config) { return config.ends_with(kEveryNodeSuffix); }
// GPU pods through deploy/'s gpushare scheduler configuration.
bool GpuPods(std::string_view config) { return config.starts_with("gpu"); }
// The "none" configuration a configuration's ratio is taken over.
std::string BaselineOf(std::string_view config) {
  if (ScoresEveryNode(config)) return "none-all";
  if (GpuPods(config)) return "gpu-none";
  return "none";
}
bool Baseline(std::string_view config) { return config == BaselineOf(config); }

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

bool ParseOptions(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    auto int_arg = [&](int& into, int lo, int hi) {
      if (!has_value) return false;
      into = std::atoi(argv[++i]);
      return into >= lo && into <= hi;
    };
    bool ok = true;
    if (a == "--nodes") {
      ok = int_arg(o.nodes, 1, 20000);
    } else if (a == "--pods") {
      ok = int_arg(o.pods, 1, 20000);
    } else if (a == "--rounds") {
      ok = int_arg(o.rounds, 1, 20);
    } else if (a == "--clients") {
      ok = int_arg(o.clients, 1, 64);
    } else if (a == "--churn" && has_value) {
      o.churn = std::atof(argv[++i]);
      ok = o.churn >= 0 && o.churn <= 10000;
    } else if (a == "--run-timeout") {
      ok = int_arg(o.run_timeout_seconds, 10, 3600);
    } else if (a == "--schedext" && has_value) {
      o.schedext_binary = argv[++i];
    } else if (a == "--go-baseline" && has_value) {
      o.go_baseline = argv[++i];
    } else if (a == "--limits" && has_value) {
      o.limits = SplitCommas(argv[++i]);
    } else if (a == "--configs" && has_value) {
      o.configs = SplitCommas(argv[++i]);
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "bad argument %s\n", a.c_str());
      return false;
    }
  }
  for (const std::string& l : o.limits) {
    if (l != "shipped" && l != "lifted") return false;
  }
  for (const std::string& c : o.configs) {
    if (c != "none" && c != "decide" && c != "bind" && c != "gpu" && c != "gpu-none" &&
        c != "gpu-decide" && c != "none-all" && c != "decide-all" && c != "go") {
      return false;
    }
    if (c == "go" && o.go_baseline.empty()) {
      std::fprintf(stderr, "configuration go needs --go-baseline\n");
      return false;
    }
  }
  return true;
}

// Runs `work(i)` for i in [0, n) on `threads` threads.
void Parallel(int n, int threads, const std::function<void(int)>& work) {
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < n; i = next++) work(i);
    });
  }
  for (std::thread& t : pool) t.join();
}

size_t CountOf(const std::string& text, std::string_view needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

struct RunResult {
  int bound = 0;
  double pods_per_second = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  int64_t bind_errors = 0;
  size_t refused_503 = 0;
  size_t scheduler_timeouts = 0;
  int64_t failed_scheduling = 0;
  double scheduler_cpu_ms_per_pod = 0;
  double schedext_cpu_ms_per_pod = 0;
  size_t churn_writes = 0;
  size_t churn_errors = 0;
  double churn_seconds = 0;
  std::string churn_first_error;
};

class Bench {
 public:
  Bench(ControlPlane& cp, const Options& o) : cp_(cp), o_(o) {
    if (!o_.schedext_binary.empty()) schedext_.set_binary(o_.schedext_binary);
    for (int i = 0; i < o_.nodes; ++i) node_names_.push_back("node-" + std::to_string(i));
  }

  Status CreateNodes() {
    std::atomic<int> failed{0};
    std::string first_error;
    std::mutex mu;
    Parallel(o_.nodes, o_.clients, [&](int i) {
      e2e::NodeSpec spec;
      spec.name = node_names_[static_cast<size_t>(i)];
      spec.capacity = {{"cpu", "8"},
                       {"memory", "32Gi"},
                       {"aliyun.com/gpu-mem", "64"},
                       {"aliyun.com/gpu-count", "4"}};
      spec.labels = {{"kubernetes.io/hostname", spec.name}};
      const Status s = e2e::CreateReadyNode(cp_, spec);
      if (!s.ok()) {
        ++failed;
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.empty()) first_error = s.ToString();
      }
    });
    if (failed > 0) return InternalError(std::to_string(failed.load()) + " nodes: " + first_error);
    return OkStatus();
  }

  // bench/go-baseline with a node map of every node as the API server lists
  // them (what its informer would hold).
  Status StartGoBaseline() {
    SCHEDEXT_ASSIGN_OR_RETURN(testing::ApiReply nodes, cp_.AdminRequest("GET", "/api/v1/nodes"));
    if (nodes.status != 200) {
      return InternalError("node list: HTTP " + std::to_string(nodes.status));
    }
    const std::string directory = cp_.dir() + "/go-baseline-nodes.json";
    {
      std::ofstream f(directory, std::ios::binary | std::ios::trunc);
      f << "{\"Nodes\":" << nodes.body << "}";
      if (!f) return InternalError("cannot write " + directory);
    }
    const std::string log = cp_.dir() + "/go-baseline.log";
    go_pid_ = prod::SpawnChild({o_.go_baseline, "--listen", "127.0.0.1:0", "--directory", directory},
                               log);
    go_port_ = prod::WaitListeningPort(go_pid_, log, "listening on 127.0.0.1:",
                                       std::chrono::seconds(120));
    if (go_port_ <= 0) {
      return InternalError("go-baseline did not start (" + log + ")");
    }
    return OkStatus();
  }

  void StopGoBaseline() {
    if (go_pid_ > 0) prod::StopChild(go_pid_, std::chrono::seconds(5));
  }

  Status StartSchedext(const std::string& limits) {
    schedext_.Stop();
    SCHEDEXT_ASSIGN_OR_RETURN(std::string config,
                              e2e::ReadSourceFile("deploy/gpushare/schedext.yaml"));
    std::string overlay = "server:\n  statusListen: \"127.0.0.1:0\"\n";
    if (limits == "lifted") overlay += "cluster:\n  qps: 5000\n  burst: 5000\n";
    SCHEDEXT_ASSIGN_OR_RETURN(config, e2e::MergeYaml(config, overlay));
    return schedext_.Start(cp_.dir(), config, cp_.schedext_kubeconfig(), {},
                           {"POD_NAMESPACE=" + cp_.options().schedext_namespace}, {},
                           std::chrono::seconds(180));
  }

  StatusOr<RunResult> Run(const std::string& config, const std::string& limits, int run) {
    const bool gpu = GpuPods(config);
    const bool every_node = ScoresEveryNode(config);
    const std::string base =
        every_node ? config.substr(0, config.size() - kEveryNodeSuffix.size()) : config;
    const bool go = config == "go";
    e2e::SchedulerEdits edits;
    edits.url_prefix = go ? "http://127.0.0.1:" + std::to_string(go_port_)
                          : schedext_.url() + (gpu ? "/gpushare" : "");
    if (base == "none" || base == "gpu-none") edits.drop_extenders = true;
    if (base == "decide" || base == "gpu-decide" || go) edits.bind = false;
    if (config == "bind" || config == "gpu") edits.bind = true;
    SCHEDEXT_ASSIGN_OR_RETURN(
        std::string scheduler_config,
        e2e::SchedulerConfigFromDeploy(
            cp_,
            gpu ? "deploy/scheduler/kube-scheduler-config-gpushare.yaml"
                : "deploy/scheduler/kube-scheduler-config-nodecache.yaml",
            edits));
    if (limits == "lifted") {
      SCHEDEXT_ASSIGN_OR_RETURN(scheduler_config,
                                e2e::MergeYaml(scheduler_config,
                                               "clientConnection:\n  qps: 5000\n  burst: 5000\n"));
    }
    if (every_node) {
      SCHEDEXT_ASSIGN_OR_RETURN(
          scheduler_config,
          e2e::MergeYaml(scheduler_config, "percentageOfNodesToScore: 100\n"));
    }
    const std::string ns = "tp-" + std::to_string(run);
    SCHEDEXT_RETURN_IF_ERROR(cp_.CreateNamespace(ns));
    SCHEDEXT_RETURN_IF_ERROR(cp_.StartScheduler(scheduler_config).status());
    const std::string profile = gpu ? "gpushare" : "default";
    const int64_t bind_errors_before = e2e::RequestCount(schedext_.port(), profile, "bind", "error");
    const std::string schedext_log_before = e2e::ReadWholeFile(schedext_.log_path());

    // Watch the namespace's pods from before the first create.
    std::mutex mu;
    std::map<std::string, steady_clock::time_point> created;
    std::map<std::string, steady_clock::time_point> bound;
    std::unique_ptr<cluster::KubeClient> watcher = AdminClient();
    if (watcher == nullptr) return InternalError("no API client");
    std::atomic<bool> watching{true};
    std::thread watch([&] {
      while (watching) {
        Status ignored = watcher->Watch(
            "/api/v1/namespaces/" + ns + "/pods?watch=true&allowWatchBookmarks=false",
            [&](std::string_view line) {
              const json e = json::parse(line, nullptr, false);
              if (!e.is_object() || !e.contains("object")) return watching.load();
              const json& pod = e["object"];
              const std::string node = pod.value("spec", json::object()).value("nodeName", "");
              if (!node.empty()) {
                const std::string name = pod["metadata"].value("name", "");
                std::lock_guard<std::mutex> lock(mu);
                bound.emplace(name, steady_clock::now());
              }
              return watching.load();
            });
        (void)ignored;
      }
    });
    // One pod first, bound before the burst: the scheduler has synced its
    // informers and the extender path is warm, so the burst measures
    // scheduling alone.
    {
      e2e::PodSpec warm;
      warm.namespace_name = ns;
      warm.name = "warm-up";
      warm.requests = {{"cpu", "10m"}};
      if (gpu) warm.limits = {{"aliyun.com/gpu-mem", "1"}};
      SCHEDEXT_RETURN_IF_ERROR(e2e::CreatePod(cp_, warm).status());
      const auto warm_deadline = steady_clock::now() + std::chrono::seconds(120);
      for (;;) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (bound.count("warm-up") > 0) break;
        }
        if (steady_clock::now() >= warm_deadline) {
          watching = false;
          watcher->CancelWatches();
          watch.join();
          cp_.StopScheduler();
          return DeadlineExceededError("the warm-up pod was not bound in 120 s");
        }
        std::this_thread::sleep_for(milliseconds(50));
      }
    }

    // Node heartbeats, pod label patches and bound pods created and deleted
    // while the burst is scheduled: events for the scheduler's and schedext's
    // informers alike.
    prod::Churn churn(cp_, node_names_, 0, o_.churn, {}, "churn-" + std::to_string(run) + "-");
    churn.Start();
    const prod::ProcSample scheduler_before = prod::SampleProcess(cp_.scheduler().pid);
    // The extender's CPU: schedext's, or the Go extender's in its place.
    const pid_t extender = go ? go_pid_ : schedext_.pid();
    const prod::ProcSample schedext_before = prod::SampleProcess(extender);
    std::atomic<int> create_failures{0};
    Parallel(o_.pods, o_.clients, [&](int i) {
      e2e::PodSpec spec;
      spec.namespace_name = ns;
      spec.name = "p" + std::to_string(i);
      spec.requests = {{"cpu", "10m"}, {"memory", "16Mi"}};
      if (gpu) spec.limits = {{"aliyun.com/gpu-mem", "1"}};
      const auto at = steady_clock::now();
      if (!e2e::CreatePod(cp_, spec).ok()) {
        ++create_failures;
        return;
      }
      std::lock_guard<std::mutex> lock(mu);
      created.emplace(spec.name, at);
    });
    const auto deadline = steady_clock::now() + std::chrono::seconds(o_.run_timeout_seconds);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (bound.size() >= created.size() + 1) break;  // + the warm-up pod
      }
      if (steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(milliseconds(100));
    }
    churn.Stop();
    RunResult r;
    r.churn_writes = churn.writes();
    r.churn_errors = churn.errors();
    r.churn_seconds = churn.seconds();
    r.churn_first_error = churn.first_error();
    r.scheduler_cpu_ms_per_pod =
        (prod::SampleProcess(cp_.scheduler().pid).cpu_s - scheduler_before.cpu_s) * 1000 / o_.pods;
    r.schedext_cpu_ms_per_pod =
        (prod::SampleProcess(extender).cpu_s - schedext_before.cpu_s) * 1000 / o_.pods;
    watching = false;
    watcher->CancelWatches();
    watch.join();

    const std::string scheduler_log = e2e::ReadWholeFile(cp_.scheduler().log_path);
    cp_.StopScheduler();
    std::vector<double> latencies;
    steady_clock::time_point first = steady_clock::time_point::max();
    steady_clock::time_point last = steady_clock::time_point::min();
    for (const auto& [name, at] : created) {
      first = std::min(first, at);
      auto b = bound.find(name);
      if (b == bound.end()) continue;
      last = std::max(last, b->second);
      latencies.push_back(std::chrono::duration<double, std::milli>(b->second - at).count());
    }
    r.bound = static_cast<int>(latencies.size());
    std::sort(latencies.begin(), latencies.end());
    if (!latencies.empty()) {
      r.p50_ms = latencies[latencies.size() / 2];
      r.p99_ms = latencies[std::min(latencies.size() - 1, latencies.size() * 99 / 100)];
      r.pods_per_second = r.bound / std::chrono::duration<double>(last - first).count();
    }
    r.bind_errors = e2e::RequestCount(schedext_.port(), profile, "bind", "error") - bind_errors_before;
    const std::string schedext_log = e2e::ReadWholeFile(schedext_.log_path());
    r.refused_503 = CountOf(schedext_log, "bind refused with 503") -
                    CountOf(schedext_log_before, "bind refused with 503");
    r.scheduler_timeouts = CountOf(scheduler_log, "context deadline exceeded") +
                           CountOf(scheduler_log, "Client.Timeout exceeded");
    StatusOr<testing::ApiReply> events = cp_.AdminRequest(
        "GET", "/api/v1/namespaces/" + ns + "/events?fieldSelector=reason%3DFailedScheduling");
    if (events.ok() && events->status == 200) {
      const json list = json::parse(events->body, nullptr, false);
      if (list.is_object()) {
        for (const json& e : list.value("items", json::array())) {
          r.failed_scheduling += std::max<int64_t>(1, e.value("count", int64_t{1}));
        }
      }
    }
    // Bound pods would stay in both caches for the next runs.
    Status ignored =
        cp_.AdminRequest("DELETE", "/api/v1/namespaces/" + ns + "/pods?gracePeriodSeconds=0")
            .status();
    (void)ignored;
    if (create_failures > 0) {
      return InternalError(std::to_string(create_failures.load()) + " pod creates failed");
    }
    return r;
  }

  void StopSchedext() { schedext_.Stop(); }

 private:
  std::unique_ptr<cluster::KubeClient> AdminClient() {
    cluster::ClientConfig c;
    c.server = cp_.url();
    c.ca_pem = cp_.ca_pem();
    c.token = cp_.admin_token();
    c.qps = 0;
    c.timeout = std::chrono::seconds(30);
    auto client = cluster::NewHttpKubeClient(c);
    return client.ok() ? std::move(client).value() : nullptr;
  }

  ControlPlane& cp_;
  const Options& o_;
  std::vector<std::string> node_names_;  // the churn writers read it
  e2e::SchedextProcess schedext_;
  pid_t go_pid_ = -1;
  int go_port_ = -1;
};

std::string Fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

int Main(int argc, char** argv) {
  // A write to a connection the API server closed is an error to report, not
  // the end of the process.
  std::signal(SIGPIPE, SIG_IGN);
  Options o;
  if (!ParseOptions(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: schedext-throughput [--nodes N] [--pods P] [--rounds R] [--clients C]\n"
                 "         [--limits shipped,lifted]\n"
                 "         [--configs none,decide,bind,gpu,none-all,decide-all,gpu-none,gpu-decide]\n"
                 "         [--churn WRITES_PER_S] [--run-timeout SECONDS] [--schedext BINARY]\n"
                 "         [--go-baseline BINARY] (configuration go)\n");
    return 2;
  }
  auto binaries = testing::FindControlPlaneBinaries();
  if (!binaries.ok() || binaries->kube_scheduler.empty()) {
    std::fprintf(stderr, "control plane binaries: %s\n",
                 binaries.ok() ? "no kube-scheduler" : binaries.status().ToString().c_str());
    // CTest's SKIP_RETURN_CODE, except under CI=true, where it must fail.
    return testing::ControlPlaneRequired() ? 1 : 77;
  }
  ControlPlane cp(*binaries);
  const Status started = cp.Start();
  if (!started.ok()) {
    std::fprintf(stderr, "control plane: %s\n", started.ToString().c_str());
    return 1;
  }
  Bench bench(cp, o);
  const auto setup = steady_clock::now();
  const Status nodes = bench.CreateNodes();
  if (!nodes.ok()) {
    std::fprintf(stderr, "nodes: %s\n", nodes.ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "%d nodes created in %.1f s\n", o.nodes,
               std::chrono::duration<double>(steady_clock::now() - setup).count());
  if (std::find(o.configs.begin(), o.configs.end(), "go") != o.configs.end()) {
    const Status go = bench.StartGoBaseline();
    if (!go.ok()) {
      std::fprintf(stderr, "go-baseline: %s\n", go.ToString().c_str());
      return 1;
    }
  }
  int run = 0;
  int status = 0;
  for (const std::string& limits : o.limits) {
    const Status s = bench.StartSchedext(limits);
    if (!s.ok()) {
      std::fprintf(stderr, "schedext: %s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("\n### %d nodes, %d pods, client limits %s\n\n", o.nodes, o.pods,
                limits.c_str());
    if (o.churn > 0) {
      std::printf("Under watch churn: %.0f writes/s (node heartbeats, pod label patches, bound "
                  "pods created and deleted) during each burst.\n\n",
                  o.churn);
    }
    std::printf("| round | configuration | bound | pods/s | ratio to none | create->bound p50 ms | "
                "p99 ms | scheduler CPU ms/pod | extender CPU ms/pod | bind errors | 503s | "
                "scheduler timeouts | FailedScheduling |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::fflush(stdout);
    for (int round = 0; round < o.rounds; ++round) {
      // pods/s of each baseline ("none", "none-all", "gpu-none") in this round.
      std::map<std::string, double> none;
      for (const std::string& config : o.configs) {
        StatusOr<RunResult> r = bench.Run(config, limits, run++);
        if (!r.ok()) {
          std::fprintf(stderr, "%s: %s\n", config.c_str(), r.status().ToString().c_str());
          status = 1;
          continue;
        }
        if (Baseline(config)) none[config] = r->pods_per_second;
        if (r->bound != o.pods) status = 1;
        // GPU configurations over "none" when "gpu-none" did not run.
        std::string over = BaselineOf(config);
        if (none.count(over) == 0 && over == "gpu-none") over = "none";
        const double baseline = none.count(over) > 0 ? none[over] : 0;
        std::printf("| %d | %s | %d/%d | %s | %s | %s | %s | %s | %s | %lld | %zu | %zu | %lld |\n",
                    round, config.c_str(), r->bound, o.pods,
                    Fixed(r->pods_per_second, 1).c_str(),
                    baseline > 0 ? Fixed(r->pods_per_second / baseline, 2).c_str() : "-",
                    Fixed(r->p50_ms, 0).c_str(), Fixed(r->p99_ms, 0).c_str(),
                    Fixed(r->scheduler_cpu_ms_per_pod, 2).c_str(),
                    Baseline(config) ? "-" : Fixed(r->schedext_cpu_ms_per_pod, 2).c_str(),
                    static_cast<long long>(r->bind_errors), r->refused_503, r->scheduler_timeouts,
                    static_cast<long long>(r->failed_scheduling));
        if (o.churn > 0 && (r->churn_errors > 0 ||
                            r->churn_writes < static_cast<size_t>(o.churn * r->churn_seconds / 2))) {
          std::fprintf(stderr, "%s: churn %zu writes in %.1f s, %zu errors (first: %s)\n",
                       config.c_str(), r->churn_writes, r->churn_seconds, r->churn_errors,
                       r->churn_first_error.c_str());
        }
        std::fflush(stdout);
      }
    }
  }
  bench.StopSchedext();
  bench.StopGoBaseline();
  cp.Stop();
  return status;
}

}  // namespace
}  // namespace schedext::bench

int main(int argc, char** argv) { return schedext::bench::Main(argc, argv); }
