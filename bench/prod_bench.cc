// schedext-prod-bench: schedext measured the way production runs it (issue 15,
// part 1). A real etcd + kube-apiserver 1.26 on loopback (the control-plane
// fixture of test/testing), N generated ~11 KB nodes (bench/gen) and bound pods
// created through it, the real schedext binary started with --kubeconfig so
// its cache fills through the informers (LIST + WATCH), /readyz awaited, then
// filter and prioritize requests of N names over one keep-alive connection,
// alternating rounds against the Go floor (bench/go-baseline), for every
// profile of bench/prod-profiles.yaml, idle and under watch churn (a bounded
// background writer updating nodes and pods through the API server at a fixed
// rate). Full mode (the nodes in the body) is measured too. Each run reads the
// servers' /proc counters (CPU, page faults, context switches) and the
// machine's /proc/stat (busy, steal) so a slow round can be told apart from a
// busy machine. --trace-seconds adds per-window time series for part 3.
// --cpu-split puts the control plane (etcd, kube-apiserver) and the churn
// writers on one half of the CPUs and schedext, the Go floor and the clients
// on the other, as production places them (the API server on the control
// plane's machines, not on the extender's cores); without it every process
// shares every CPU, which on a 2-vCPU box is the test rig's contention.
//
//   schedext-prod-bench --schedext BIN --config bench/prod-profiles.yaml --out DIR
//       [--go-baseline BIN] [--nodes 5000] [--pods-per-node 2] [--rounds 3]
//       [--requests 300] [--go-requests 60] [--churn-rate 60] [--full 5000,15000]
//       [--full-requests 20]
//       [--profiles default,resources,gpushare,hami,labels] [--gpu-profiles gpushare]
//       [--hami-profiles hami]
//       [--trace-seconds 0] [--trace-profiles default,gpushare] [--cpu-split] [--smoke]
//
// Writes DIR/runs.txt (one key=value line per run), DIR/summary.md (tables),
// DIR/trace-*.txt and the children's logs. Loopback only; every wait and loop
// is bounded; children are stopped by PID (and get SIGKILL if this process
// dies). --smoke is a short run for CTest: a few nodes, one round, and a
// non-zero exit on any error reply or a reply that does not account for every
// node — never on speed. Exit 77 (CTest's skip) when the control-plane
// binaries are missing and $CI is not "true".
//
// This file is the driver: the phases above, in order. Its parts are in
// prod_bench/: options.h (the flags), processes.h (CPU split, child
// processes), cluster.h (objects created through the API server, the churn),
// measure.h (requests, latencies, /proc counters) and report.h (reply checks,
// summary.md).
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gen/payload_gen.h"
#include "gen/prod_objects.h"
#include "prod_bench/cluster.h"
#include "prod_bench/measure.h"
#include "prod_bench/options.h"
#include "prod_bench/processes.h"
#include "prod_bench/report.h"
#include "testing/control_plane.h"

namespace schedext::bench::prod {
namespace {

using Clock = std::chrono::steady_clock;
using schedext::bench::NodeObject;
using schedext::bench::PodObject;
using schedext::testing::ControlPlaneOptions;

int Main(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, o)) {
    std::cerr << kUsage;
    return 2;
  }
  std::filesystem::create_directories(o.out);
  auto binaries = schedext::testing::FindControlPlaneBinaries();
  if (!binaries.ok()) {
    std::cerr << "schedext-prod-bench: " << binaries.status().message() << "\n";
    return schedext::testing::ControlPlaneRequired() ? 1 : 77;
  }
  std::ofstream runs_out(o.out + "/runs.txt", std::ios::trunc);
  std::ostringstream notes;  // the summary's header lines
  auto log = [&](const std::string& line) {
    std::cerr << "[prod-bench " << UtcNow().substr(11, 8) << "] " << line << "\n";
  };
  auto uptime = [&](const std::string& when) {
    const std::string line = when + ": " + UtcNow() + ", load average " + LoadAverage();
    log(line);
    notes << "* " << line << "\n";
  };
  uptime("start");

  // Nodes: the generator's, so the Go floor and full mode see the same ones.
  const size_t max_full = o.full.empty() ? 0 : *std::max_element(o.full.begin(), o.full.end());
  const schedext::bench::PayloadSet set(o.seed, std::max(o.nodes, max_full));
  std::vector<std::string> names;
  for (size_t i = 0; i < o.nodes; ++i) names.emplace_back(set.node_name(i));

  ControlPlaneOptions cpo;
  // No controller-manager or kubelet: admission's not-ready taint would stay
  // on every node.
  cpo.apiserver_flags = {"--disable-admission-plugins=TaintNodesByCondition"};
  cpo.start_timeout = std::chrono::seconds(120);
  // etcd and kube-apiserver inherit the mask of the thread that forks them.
  const CpuSplit split = o.cpu_split ? SplitCpus() : CpuSplit{};
  if (o.cpu_split && split.control.empty()) {
    log("--cpu-split: only one CPU, nothing split");
  }
  if (!PinThisThread(split.control)) {
    std::cerr << "schedext-prod-bench: sched_setaffinity: " << std::strerror(errno) << "\n";
    return 1;
  }
  ControlPlane cp(*binaries, cpo);
  if (auto s = cp.Start(); !s.ok()) {
    std::cerr << "schedext-prod-bench: control plane: " << s.message() << "\n";
    return 1;
  }
  // From here on this thread, the clients it starts and its children
  // (schedext, the Go floor) run on the serving side.
  if (!PinThisThread(split.serving)) {
    std::cerr << "schedext-prod-bench: sched_setaffinity: " << std::strerror(errno) << "\n";
    return 1;
  }
  if (!split.control.empty()) {
    const std::string l = "CPUs split (--cpu-split) for the names-mode rounds and time series: "
                          "etcd, kube-apiserver and the churn writers on CPU " +
                          CpuList(split.control) + "; schedext, the Go floor and the clients on CPU " +
                          CpuList(split.serving) + " (full mode: schedext, the Go floor and the "
                          "client on every CPU, as its decode uses two threads)";
    log(l);
    notes << "* " << l << "\n";
  }
  const auto t_create = Clock::now();
  {
    std::vector<std::pair<std::string, std::string>> objects;
    for (size_t i = 0; i < o.nodes; ++i)
      objects.emplace_back("/api/v1/nodes", NodeObject(set.node_json(i)));
    if (std::string e = CreateAll(cp, objects, o.create_threads); !e.empty()) {
      std::cerr << "schedext-prod-bench: creating nodes: " << e << "\n";
      return 1;
    }
    objects.clear();
    const size_t pods = o.nodes * o.pods_per_node;
    for (size_t i = 0; i < pods; ++i) {
      objects.emplace_back("/api/v1/namespaces/default/pods",
                           PodObject("bench-" + std::to_string(i), names[i % o.nodes], i));
    }
    if (std::string e = CreateAll(cp, objects, o.create_threads); !e.empty()) {
      std::cerr << "schedext-prod-bench: creating pods: " << e << "\n";
      return 1;
    }
  }
  const double create_s = std::chrono::duration<double>(Clock::now() - t_create).count();
  {
    std::ostringstream l;
    l << o.nodes << " nodes (" << set.Stats(o.nodes).median_bytes << " B median, +4 GPUs each) and "
      << o.nodes * o.pods_per_node << " pods created through kube-apiserver ("
      << cp.api_server_version() << ") in " << Ms(create_s) << " s";
    log(l.str());
    notes << "* " << l.str() << "\n";
  }

  // schedext through its kubeconfig, and the Go floor.
  // --log-level info for the one line that names the port (requests are
  // logged at debug only).
  pid_t sx = SpawnChild({o.schedext, "--config", o.config, "--listen", "127.0.0.1:0", "--log-level",
                         "info", "--kubeconfig", cp.schedext_kubeconfig()},
                        o.out + "/schedext.log");
  const auto t_sync = Clock::now();
  const int port = WaitListeningPort(sx, o.out + "/schedext.log",
                                     "listening on 127.0.0.1:", std::chrono::seconds(120));
  bool ready = false;
  while (port > 0 && Clock::now() - t_sync < std::chrono::seconds(600) && Running(sx)) {
    if (Get(port, "/readyz") == 200) {
      ready = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!ready) {
    std::cerr << "schedext-prod-bench: schedext not ready (log: " << o.out << "/schedext.log)\n";
    StopChild(sx, std::chrono::seconds(10));
    return 1;
  }
  {
    const std::string l = "schedext ready (/readyz 200, informers synced) " +
                          Ms(std::chrono::duration<double>(Clock::now() - t_sync).count()) +
                          " s after start, RSS " + std::to_string(SampleProcess(sx).rss_kb / 1024) +
                          " MiB, pid " + std::to_string(sx);
    log(l);
    notes << "* " << l << "\n";
    std::ofstream(o.out + "/schedext.pid") << sx << "\n";
  }
  pid_t go = -1;
  int go_port = -1;
  if (!o.go_baseline.empty()) {
    const std::string dir_file = o.out + "/go-directory.json";
    {
      std::ofstream f(dir_file, std::ios::binary | std::ios::trunc);
      f << set.Body(o.nodes, schedext::bench::Mode::kFull, schedext::bench::Verb::kFilter);
    }
    go = SpawnChild({o.go_baseline, "--listen", "127.0.0.1:0", "--directory", dir_file},
                    o.out + "/go-baseline.log");
    go_port = WaitListeningPort(go, o.out + "/go-baseline.log",
                                "listening on 127.0.0.1:", std::chrono::seconds(120));
    if (go_port <= 0 || Get(go_port, "/healthz") != 200) {
      std::cerr << "schedext-prod-bench: go-baseline not up (" << o.out << "/go-baseline.log)\n";
      StopChild(go, std::chrono::seconds(5));
      StopChild(sx, std::chrono::seconds(10));
      return 1;
    }
  }

  // Bodies: the generator's pending pod; GPU profiles get a pod that asks for
  // 4 GiB of GPU memory in its app container's limits, HAMi profiles one that
  // asks for a vGPU.
  const std::string names_body =
      set.Body(o.nodes, schedext::bench::Mode::kNames, schedext::bench::Verb::kFilter);
  const std::string gpu_body = schedext::bench::GpuNamesBody(names_body);
  const std::string hami_body = schedext::bench::HamiNamesBody(names_body);
  if (gpu_body.empty() || hami_body.empty()) {
    std::cerr << "schedext-prod-bench: the generator's pod changed shape; no GPU request\n";
    return 1;
  }
  auto body_of = [&](const std::string& profile) -> const std::string& {
    const auto in = [&](const std::vector<std::string>& list) {
      return std::find(list.begin(), list.end(), profile) != list.end();
    };
    return in(o.hami_profiles) ? hami_body : in(o.gpu_profiles) ? gpu_body : names_body;
  };

  bool failed = false;
  // Sanity: every profile answers for every node, once, before measuring.
  std::ostringstream sanity;
  for (const std::string& profile : o.profiles) {
    for (const std::string verb : {"filter", "prioritize"}) {
      Conn c(port);
      int status = 0;
      std::string reply;
      const bool sent = c.Exchange(PostRequest(port, "/" + profile + "/" + verb, body_of(profile)),
                                   status, reply);
      bool ok = sent && status == 200;
      const std::string what = sent ? CheckReply(verb, reply, o.nodes, ok) : "no reply";
      sanity << "* `/" << profile << "/" << verb << "`: " << (ok ? "" : "**FAILED** ") << what
             << (status != 200 ? " (status " + std::to_string(status) + ")" : "") << "\n";
      if (!ok) failed = true;
    }
  }
  log("sanity:\n" + sanity.str());

  std::vector<Run> runs;
  std::vector<std::string> variant_names;
  auto record = [&](Run r, const std::string& condition, int round, const std::string& profile,
                    const std::string& verb, const std::string& server, size_t n) {
    r.condition = condition;
    r.round = round;
    r.profile = profile;
    r.verb = verb;
    r.server = server;
    r.nodes = n;
    runs_out << RunLine(r) << std::endl;
    if (r.errors > 0) {
      failed = true;
      log("errors in " + RunLine(r) + ": " + r.first_error);
    }
    runs.push_back(std::move(r));
  };

  Churn churn(cp, names, o.nodes * o.pods_per_node, o.churn_rate, split.control);
  std::ostringstream churn_note;
  for (const std::string condition : {"idle", "churn"}) {
    if (condition == "churn") {
      if (o.churn_rate <= 0) break;
      churn.Start();
      std::this_thread::sleep_for(std::chrono::seconds(o.smoke ? 1 : 3));
    }
    uptime(condition + " rounds begin");
    for (int round = 1; round <= o.rounds; ++round) {
      for (const std::string& profile : o.profiles) {
        for (const std::string verb : {"filter", "prioritize"}) {
          const std::string path = "/" + profile + "/" + verb;
          const std::string& body = body_of(profile);
          const std::string sreq = PostRequest(port, path, body);
          auto run_schedext = [&] {
            WaitQuiet(go);
            record(Measure(port, sx, sreq, 3, o.requests, 30), condition, round, profile, verb,
                   "schedext", o.nodes);
          };
          auto run_go = [&] {
            if (go < 0) return;
            WaitQuiet(sx);
            record(
                Measure(go_port, go, PostRequest(go_port, "/" + verb, body), 2, o.go_requests, 30),
                condition, round, profile, verb, "go", o.nodes);
          };
          if (round % 2 == 1) {
            run_schedext();
            run_go();
          } else {
            run_go();
            run_schedext();
          }
        }
      }
      log(condition + " round " + std::to_string(round) + " done");
    }
    if (condition == "churn") {
      churn.Stop();
      std::ostringstream c;
      c << churn.writes() << " writes in " << Ms(churn.seconds()) << " s ("
        << Ms(static_cast<double>(churn.writes()) / std::max(churn.seconds(), 1e-9))
        << "/s: node heartbeats, pod label patches, bound pods created and deleted), "
        << churn.errors() << " errors" << (churn.errors() ? " (" + churn.first_error() + ")" : "");
      churn_note << c.str();
      log("churn: " + c.str());
      if (churn.errors() > 0 && o.smoke) failed = true;
    }
    uptime(condition + " rounds end");
  }

  // Full mode: the nodes in the body (default profile; the cache still
  // supplies usage for the nodes it knows).
  std::vector<int> every_cpu = split.serving;
  every_cpu.insert(every_cpu.end(), split.control.begin(), split.control.end());
  for (const pid_t pid : {sx, go, pid_t{0}}) PinProcess(pid, every_cpu);
  for (size_t n : o.full) {
    const std::string fbody =
        set.Body(n, schedext::bench::Mode::kFull, schedext::bench::Verb::kFilter);
    for (const std::string verb : {"filter", "prioritize"}) {
      if (n > 5000 && verb == std::string("prioritize")) continue;
      const std::string profile = o.profiles.empty() ? "default" : o.profiles.front();
      const FullRequests counts = FullRequestsFor(o, n);
      const int sreqs = counts.schedext;
      const int greqs = counts.go;
      if (o.smoke) {
        Conn c(port);
        int status = 0;
        std::string reply;
        bool ok = c.Exchange(PostRequest(port, "/" + profile + "/" + verb, fbody), status, reply) &&
                  status == 200;
        const std::string what = CheckReply(verb, reply, n, ok);
        sanity << "* full `/" << profile << "/" << verb << "` " << n
               << " nodes: " << (ok ? "" : "**FAILED** ") << what << "\n";
        if (!ok) failed = true;
      }
      for (int round = 1; round <= o.rounds; ++round) {
        auto run_schedext = [&] {
          WaitQuiet(go);
          record(Measure(port, sx, PostRequest(port, "/" + profile + "/" + verb, fbody), 1, sreqs,
                         120),
                 "full", round, profile, verb, "schedext", n);
        };
        auto run_go = [&] {
          if (go < 0) return;
          WaitQuiet(sx);
          record(Measure(go_port, go, PostRequest(go_port, "/" + verb, fbody), 1, greqs, 120),
                 "full", round, profile, verb, "go", n);
        };
        if (round % 2 == 1) {
          run_schedext();
          run_go();
        } else {
          run_go();
          run_schedext();
        }
      }
    }
    log("full mode " + std::to_string(n) + " done");
  }
  uptime("full mode end");
  for (const pid_t pid : {sx, go, pid_t{0}}) PinProcess(pid, split.serving);

  // Variants: other configurations of the same binary, on the same cache
  // contents, alternating with the main one (order rotating per round).
  if (!o.variants.empty()) {
    struct Server {
      std::string name;
      int port;
      pid_t pid;
    };
    std::vector<Server> servers = {{"main", port, sx}};
    for (const auto& [name, spec] : o.variants) {
      const std::string vlog = o.out + "/schedext-" + name + ".log";
      const size_t at = spec.find('@');
      const std::string file = spec.substr(0, at);
      const std::string binary = at == std::string::npos ? o.schedext : spec.substr(at + 1);
      pid_t vpid = SpawnChild({binary, "--config", file, "--listen", "127.0.0.1:0",
                               "--log-level", "info", "--kubeconfig", cp.schedext_kubeconfig()},
                              vlog);
      const int vport =
          WaitListeningPort(vpid, vlog, "listening on 127.0.0.1:", std::chrono::seconds(120));
      const auto t0 = Clock::now();
      while (vport > 0 && Clock::now() - t0 < std::chrono::seconds(600) && Running(vpid) &&
             Get(vport, "/readyz") != 200) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (vport <= 0 || Get(vport, "/readyz") != 200) {
        log("variant " + name + " not ready; skipped");
        StopChild(vpid, std::chrono::seconds(10));
        continue;
      }
      servers.push_back({name, vport, vpid});
    }
    uptime("variant rounds begin");
    for (int round = 1; round <= o.rounds; ++round) {
      for (const std::string& profile : o.trace_profiles) {
        for (const std::string verb : {"filter", "prioritize"}) {
          for (size_t k = 0; k < servers.size(); ++k) {
            const Server& v = servers[(k + static_cast<size_t>(round)) % servers.size()];
            for (const Server& other : servers) {
              if (other.pid != v.pid) WaitQuiet(other.pid);
            }
            record(Measure(v.port, v.pid,
                           PostRequest(v.port, "/" + profile + "/" + verb, body_of(profile)), 3,
                           o.requests, 30),
                   "variant:" + v.name, round, profile, verb, "schedext", o.nodes);
          }
        }
      }
    }
    uptime("variant rounds end");
    for (size_t k = 1; k < servers.size(); ++k) StopChild(servers[k].pid, std::chrono::seconds(30));
    variant_names.push_back("main");
    for (size_t k = 1; k < servers.size(); ++k) variant_names.push_back(servers[k].name);
  }

  // Part 3: time series of one profile's filter, idle and under churn.
  std::ostringstream traces;
  for (const std::string& profile : o.trace_profiles) {
    if (o.trace_seconds <= 0) break;
    for (const std::string condition : {"idle", "churn"}) {
      if (condition == std::string("churn")) {
        if (o.churn_rate <= 0) break;
        churn.Start();
      }
      const std::string file = o.out + "/trace-" + profile + "-" + condition + ".txt";
      std::ofstream tf(file, std::ios::trunc);
      const Trace trace = TraceRequests(
          port, sx, PostRequest(port, "/" + profile + "/filter", body_of(profile)),
          o.trace_seconds, o.trace_window_s, tf);
      const std::vector<double>& window_p50s = trace.window_p50s;
      const std::vector<double>& window_cpus = trace.window_cpus;
      if (condition == std::string("churn")) churn.Stop();
      std::vector<double> sorted = window_p50s;
      std::sort(sorted.begin(), sorted.end());
      std::vector<double> cs = window_cpus;
      std::sort(cs.begin(), cs.end());
      traces << "| " << profile << " | " << condition << " | " << window_p50s.size() << " | "
             << Ms(sorted.front()) << " / " << Ms(Median(sorted)) << " / " << Ms(sorted.back())
             << " | " << Ms(cs.front()) << " / " << Ms(Median(cs)) << " / " << Ms(cs.back())
             << " | `" << std::filesystem::path(file).filename().string() << "` |\n";
      log("trace " + profile + " " + condition + " written to " + file);
    }
  }

  uptime("end");
  const int sx_status = StopChild(sx, std::chrono::seconds(30));
  if (go > 0) StopChild(go, std::chrono::seconds(5));
  if (!(sx_status >= 0 && WIFEXITED(sx_status) && WEXITSTATUS(sx_status) == 0)) {
    log("schedext did not exit 0 on SIGTERM (status " + std::to_string(sx_status) + ")");
    failed = true;
  }
  cp.Stop();

  std::ofstream md(o.out + "/summary.md", std::ios::trunc);
  WriteSummary({.options = o,
                .notes = notes.str(),
                .sanity = sanity.str(),
                .churn = churn_note.str(),
                .traces = traces.str(),
                .runs = runs,
                .variants = variant_names,
                .go_idle = go > 0},
               md);
  md.close();
  std::cout << ReadWhole(o.out + "/summary.md");
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace schedext::bench::prod

int main(int argc, char** argv) { return schedext::bench::prod::Main(argc, argv); }
