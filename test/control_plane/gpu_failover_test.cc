// GPU-sharing binds across a leader's crash, against the real kube-apiserver,
// for both device-plugin conventions schedext speaks: gpushare (the
// `gpushare` profile of deploy/gpushare/schedext.yaml) and HAMi (the `hami`
// profile of deploy/hami/schedext.yaml, with HAMi's node lock and a stand-in
// for its device plugin releasing it). Two schedext processes with that file
// (leader election) as schedext's ServiceAccount with deploy/'s RBAC; a pool
// of clients POSTs ExtenderBindingArgs for 1,000 pending GPU pods to
// /<profile>/bind of BOTH processes, as kube-scheduler does through the
// Service; the leader is killed with SIGKILL (by PID) the moment it has
// answered a fixed number of successes, with other binds in flight.
//
// The test only speaks HTTP to schedext and reads the API server (pods, their
// annotations, the Lease, the audit log of Bindings), so it does not depend
// on how schedext is built inside.
//
// Asserted on what the API server holds once every client is done, whatever
// the interleaving:
//   * every pod whose bind was answered with success is bound to the node
//     that bind named, by exactly one Binding (audit log), made by schedext;
//   * a pod bound without a success reply is one whose reply was lost (the
//     connection broke, e.g. the leader died mid-bind); a pod never answered
//     with a lost reply is bound only if it got a success;
//   * every bound pod carries the device annotations of its convention, and
//     no device holds more than it has — GPU memory (the pods ask for 25 %
//     more than exists, so a double-booked device would show), and for HAMi
//     also its split count and cores — nor any node more than its total;
//   * the follower refused every bind until it took the lease (its replies
//     before acquireTime are refusals, before the kill "not the leader"), the
//     lease changed hands exactly once, after the kill, and the new leader then
//     bound pods.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "control_plane/control_plane_suite.h"
#include "control_plane/hami_lock_releaser.h"
#include "control_plane/scheduler_e2e.h"
#include "testing/loopback.h"

namespace schedext::testing {
namespace {

using e2e::FileTail;
using e2e::HttpGet;
using e2e::SchedextProcess;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using WallClock = std::chrono::system_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// The gpushare device plugin's names (deploy/gpushare/schedext.yaml).
constexpr char kGpuMem[] = "aliyun.com/gpu-mem";
constexpr char kGpuCount[] = "aliyun.com/gpu-count";
constexpr char kIdx[] = "ALIYUN_COM_GPU_MEM_IDX";
constexpr char kPodMem[] = "ALIYUN_COM_GPU_MEM_POD";
constexpr char kDevMem[] = "ALIYUN_COM_GPU_MEM_DEV";
constexpr char kAssigned[] = "ALIYUN_COM_GPU_MEM_ASSIGNED";
constexpr char kAssumeTime[] = "ALIYUN_COM_GPU_MEM_ASSUME_TIME";
// HAMi's (deploy/hami/schedext.yaml).
constexpr char kToAllocate[] = "hami.io/vgpu-devices-to-allocate";
constexpr char kAllocated[] = "hami.io/vgpu-devices-allocated";
constexpr char kVgpuNode[] = "hami.io/vgpu-node";
constexpr char kBindPhase[] = "hami.io/bind-phase";

// 10 nodes of 8 devices; 1,000 pods.
constexpr int kNodes = 10;
constexpr int kDevicesPerNode = 8;
constexpr int kPods = 1000;

// What one device may hold (0: not limited by that convention).
struct DeviceLimits {
  int memory = 0;  // GiB (gpushare) or MiB (HAMi)
  int vgpus = 0;
  int cores = 0;
};

// How much of a device one bound pod takes.
struct DeviceUse {
  int memory = 0;
  int vgpus = 0;
  int cores = 0;
};

// One device-plugin convention under test.
struct Flavor {
  std::string name;        // gtest parameter; namespace, lease and node prefix
  std::string config;      // the shipped schedext configuration
  std::string bind_path;   // /<profile>/bind
  DeviceLimits device;
  // The leader is killed right after answering this many successes: about
  // half of what fits, so binds remain for the new leader.
  int kill_after_successes = 0;
  bool node_lock = false;  // HAMi: binds take hami.io/mutex.lock
  std::string ns() const { return name + "-failover"; }
  std::string NodeName(int node) const { return name + "-node-" + std::to_string(node); }
};

// gpushare: 8 devices of 25 GiB per node, 2,000 GiB. The pods ask for 1, 2,
// 3, 4, 1, ... GiB: 2,500 GiB, so the devices end up (nearly) full and binds
// are refused for want of room; a device booked twice would exceed 25 GiB.
Flavor Gpushare() {
  return {"gpushare", "deploy/gpushare/schedext.yaml", "/gpushare/bind", {25, 0, 0}, 350, false};
}
int GpushareGiB(int pod) { return 1 + pod % 4; }

// HAMi: 8 devices of 24,000 MiB split 10 ways with 100 cores per node. The
// pods ask for one vGPU of 1,000, 2,000, 3,000, 4,000, 1,000, ... MiB and 0,
// 15, 30, 0, ... cores: memory (2,500,000 MiB asked of 1,920,000), vGPUs
// (1,000 of 800) and cores all run out before the pods do.
Flavor Hami() {
  return {"hami", "deploy/hami/schedext.yaml", "/hami/bind", {24000, 10, 100}, 300, true};
}
int HamiMiB(int pod) { return 1000 * (1 + pod % 4); }
int HamiCores(int pod) { return 15 * (pod % 3); }

// Concurrent clients (kube-scheduler binds each pod in a goroutine of its
// own; schedext queues them for its bind threads).
constexpr int kClients = 16;
// Liveness bound of the whole bind workload (the takeover alone waits for
// the lease: 15 s).
constexpr auto kWorkloadBound = seconds(150);
// Pause after two refusals in a row (both replicas refused) or a lost reply.
constexpr auto kBackoff = milliseconds(200);
// Pause before retrying a node whose HAMi lock another pod holds (its device
// plugin releases it once that pod is bound).
constexpr auto kLockBackoff = milliseconds(20);

std::string PodName(int pod) {
  char name[16];
  std::snprintf(name, sizeof name, "gpu-%04d", pod);
  return name;
}

// What one POST /<profile>/bind came to.
enum class Outcome {
  kBound,    // 200 {"Error":""}
  kRefused,  // not taken: connection refused, or 503 (not the leader)
  kLost,     // sent, but no whole reply (reset, EOF, timeout): in doubt
  kError,    // any other reply: the bind failed (no room, ...)
  kLocked,   // HAMi: another pod holds the node's lock; retried on that node
};

struct Reply {
  int pod = 0;
  int node = 0;
  int replica = 0;
  Outcome outcome = Outcome::kError;
  int http_status = 0;  // 0: no reply
  std::string text;     // the Error, the 503 body, or the socket error
  Clock::time_point received;
  WallClock::time_point received_wall;
};

// One bind as kube-scheduler sends it (Connection: close: every bind on a
// connection of its own, so a reset touches only the binds in flight).
Reply PostBind(int port, const std::string& path, const std::string& body) {
  Reply r;
  RawConnection c;
  if (!c.Connect(port)) {
    r.outcome = Outcome::kRefused;
    r.text = c.error();
  } else if (!c.Send(BuildRequest("POST", path, body, {{"Connection", "close"}}))) {
    r.outcome = Outcome::kLost;
    r.text = c.error();
  } else {
    HttpReply reply;
    if (!c.ReadReply(reply)) {
      r.outcome = Outcome::kLost;
      r.text = c.error();
    } else {
      r.http_status = reply.status;
      const json j = json::parse(reply.body, nullptr, false);
      const std::string error = j.is_object() && j.contains("Error") && j["Error"].is_string()
                                    ? j["Error"].get<std::string>()
                                    : reply.body;
      r.text = error;
      if (reply.status == 503) {
        r.outcome = Outcome::kRefused;
      } else if (reply.status == 200 && j.is_object() && error.empty()) {
        r.outcome = Outcome::kBound;
      } else if (reply.status == 200 && error.find("(hami.io/mutex.lock): held by ") !=
                                            std::string::npos) {
        r.outcome = Outcome::kLocked;
      } else {
        r.outcome = Outcome::kError;
      }
    }
  }
  r.received = Clock::now();
  r.received_wall = WallClock::now();
  return r;
}

// A metav1.MicroTime ("2026-12-01T14:14:28.123456Z").
std::optional<WallClock::time_point> ParseMicroTime(const std::string& text) {
  tm parts{};
  int micros = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%6dZ", &parts.tm_year, &parts.tm_mon,
                  &parts.tm_mday, &parts.tm_hour, &parts.tm_min, &parts.tm_sec, &micros) != 7) {
    return std::nullopt;
  }
  parts.tm_year -= 1900;
  parts.tm_mon -= 1;
  return WallClock::from_time_t(::timegm(&parts)) + std::chrono::microseconds(micros);
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

class GpuFailoverTest : public ControlPlaneSuite, public ::testing::WithParamInterface<Flavor> {
 protected:
  static void SetUpTestSuite() {
    StatusOr<std::string> dir = e2e::MakeTempDir("schedext-gpu-failover-");
    if (!dir.ok()) {
      setup_error() = dir.status().ToString();
      return;
    }
    suite_dir() = *dir;
    ControlPlaneOptions options;
    StatusOr<std::vector<std::string>> audit = e2e::BindingAuditFlags(*dir, &audit_log());
    if (!audit.ok()) {
      setup_error() = audit.status().ToString();
      return;
    }
    options.apiserver_flags = *audit;
    // deploy/gpushare's grants and deploy/hami's (patch nodes, for the lock).
    options.rbac_manifests.push_back("deploy/hami/rbac.yaml");
    StartSharedControlPlane(std::move(options));
  }
  static void TearDownTestSuite() {
    ControlPlaneSuite::TearDownTestSuite();
    if (std::getenv("SCHEDEXT_KEEP_CONTROL_PLANE_DIR") == nullptr) e2e::RemoveTree(suite_dir());
  }

  void SetUp() override {
    ControlPlaneSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(setup_error().empty()) << setup_error();
  }
  void TearDown() override {
    for (int i = 0; i < 2; ++i) {
      if (HasFailure() && replicas_[i]) {
        std::cerr << "---- " << Identity(i) << " (tail) ----\n"
                  << FileTail(replicas_[i]->log_path()) << "\n";
      }
      if (replicas_[i]) replicas_[i]->Kill();
    }
  }

  static std::string& suite_dir() {
    static std::string d;
    return d;
  }
  static std::string& audit_log() {
    static std::string a;
    return a;
  }
  static std::string& setup_error() {
    static std::string e;
    return e;
  }
  static std::string Identity(int replica) { return replica == 0 ? "replica-a" : "replica-b"; }

  // The flavor's shipped configuration, but on loopback, with this test's
  // lease and identity, and without the client-side rate limit: its 20
  // requests a second would hold 1,000 binds (two API calls each, HAMi's four)
  // to 100 s and more.
  static StatusOr<std::string> Config(int replica) {
    SCHEDEXT_ASSIGN_OR_RETURN(std::string shipped, e2e::ReadSourceFile(GetParam().config));
    return e2e::MergeYaml(shipped,
                          "server:\n  statusListen: \"127.0.0.1:0\"\n"
                          "cluster:\n  qps: 10000\n  burst: 10000\n"
                          "  leaderElection:\n    leaseName: " +
                              GetParam().ns() + "\n    identity: " + Identity(replica) + "\n");
  }

  Status StartReplica(int replica, std::function<bool(SchedextProcess&)> ready) {
    SCHEDEXT_ASSIGN_OR_RETURN(std::string config, Config(replica));
    const std::string dir = suite_dir() + "/" + Identity(replica);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    replicas_[replica] = std::make_unique<SchedextProcess>();
    // As deploy/base/deployment.yaml does: the Lease lives in the pod's
    // namespace, where schedext's Role is.
    return replicas_[replica]->Start(dir, config, cp().schedext_kubeconfig(), {},
                                     {"POD_NAMESPACE=" + cp().options().schedext_namespace},
                                     std::move(ready));
  }

  json Lease() const {
    StatusOr<ApiReply> r = cp().AdminRequest("GET", "/apis/coordination.k8s.io/v1/namespaces/" +
                                                        cp().options().schedext_namespace +
                                                        "/leases/" + GetParam().ns());
    if (!r.ok() || r->status != 200) return json();
    return json::parse(r->body, nullptr, false);
  }

  // Node n as the flavor's device plugin registers it: gpushare's memory and
  // count resources; HAMi's register annotation (8 devices), a fresh
  // handshake and devices × splits nvidia.com/gpu.
  void CreateGpuNode(int n) const {
    const Flavor& flavor = GetParam();
    std::map<std::string, std::string> capacity = {
        {"cpu", "64"}, {"memory", "256Gi"}, {"pods", "500"}};  // at most 200 fit
    if (flavor.node_lock) {
      capacity["nvidia.com/gpu"] = std::to_string(kDevicesPerNode * flavor.device.vgpus);
    } else {
      capacity[kGpuMem] = std::to_string(kDevicesPerNode * flavor.device.memory);
      capacity[kGpuCount] = std::to_string(kDevicesPerNode);
    }
    const std::string name = flavor.NodeName(n);
    const Status s = e2e::CreateReadyNode(cp(), {name, capacity, {}, {}, "True"});
    ASSERT_TRUE(s.ok()) << s.ToString();
    if (!flavor.node_lock) return;
    std::string devices;
    for (int d = 0; d < kDevicesPerNode; ++d) {
      devices += Uuid(name, d) + "," + std::to_string(flavor.device.vgpus) + "," +
                 std::to_string(flavor.device.memory) + "," +
                 std::to_string(flavor.device.cores) + ",NVIDIA-A100," + std::to_string(d / 4) +
                 ",true," + std::to_string(d) + ",hami-core:";
    }
    json patch;
    patch["metadata"]["annotations"]["hami.io/node-nvidia-register"] = devices;
    patch["metadata"]["annotations"]["hami.io/node-handshake"] = "Reported_2026-01-01 00:00:00";
    const auto r = cp().AdminRequest("PATCH", "/api/v1/nodes/" + name, patch.dump());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200) << r->body;
  }
  static std::string Uuid(const std::string& node, int device) {
    return "GPU-" + node + "-" + std::to_string(device);
  }

  // The device a pod bound on `node` was given and what it takes of it, from
  // its annotations as the flavor's device plugin reads them.
  void ReadAllocation(const json& a, const std::string& node, int pod, int& device,
                      DeviceUse& use) const {
    const Flavor& flavor = GetParam();
    if (!flavor.node_lock) {
      ASSERT_TRUE(a.contains(kIdx) && a.contains(kPodMem) && a.contains(kDevMem) &&
                  a.contains(kAssigned) && a.contains(kAssumeTime))
          << "bound on " << node << " with annotations " << a.dump();
      device = std::stoi(a[kIdx].get<std::string>());
      EXPECT_EQ(a[kPodMem].get<std::string>(), std::to_string(GpushareGiB(pod)));
      EXPECT_EQ(a[kDevMem].get<std::string>(), std::to_string(flavor.device.memory));
      use = {GpushareGiB(pod), 1, 0};
    } else {
      ASSERT_TRUE(a.contains(kToAllocate) && a.contains(kAllocated) && a.contains(kVgpuNode) &&
                  a.contains(kBindPhase))
          << "bound on " << node << " with annotations " << a.dump();
      // One container, one vGPU: "<uuid>,NVIDIA,<MiB>,<cores>:;".
      const std::string allocation = a[kToAllocate].get<std::string>();
      EXPECT_EQ(a[kAllocated].get<std::string>(), allocation);
      EXPECT_EQ(a[kVgpuNode].get<std::string>(), node);
      EXPECT_EQ(a[kBindPhase].get<std::string>(), "allocating");
      const std::string uuid = allocation.substr(0, allocation.find(','));
      EXPECT_EQ(allocation, uuid + ",NVIDIA," + std::to_string(HamiMiB(pod)) + "," +
                                std::to_string(HamiCores(pod)) + ":;");
      const std::string prefix = Uuid(node, 0).substr(0, Uuid(node, 0).size() - 1);
      ASSERT_EQ(uuid.rfind(prefix, 0), 0U) << "a device of another node: " << allocation;
      device = std::stoi(uuid.substr(prefix.size()));
      use = {HamiMiB(pod), 1, HamiCores(pod)};
    }
    EXPECT_GE(device, 0);
    EXPECT_LT(device, kDevicesPerNode);
  }

  std::array<std::unique_ptr<SchedextProcess>, 2> replicas_;
};

TEST_P(GpuFailoverTest, ThousandConcurrentBindsAcrossAKillNineOfTheLeaderNeverOverAllocate) {
  const Flavor& flavor = GetParam();
  const std::string ns = flavor.ns();
  const auto test_start = Clock::now();
  // ---- The cluster: GPU nodes as the device plugin advertises them, and the
  // pending pods (created before schedext starts, so both caches list them).
  ASSERT_TRUE(cp().CreateNamespace(ns).ok());
  for (int n = 0; n < kNodes; ++n) {
    ASSERT_NO_FATAL_FAILURE(CreateGpuNode(n));
  }
  std::vector<std::string> uids(kPods);
  {
    std::vector<std::thread> creators;
    std::vector<std::string> errors(8);
    for (int t = 0; t < 8; ++t) {
      creators.emplace_back([&, t] {
        for (int i = t; i < kPods && errors[t].empty(); i += 8) {
          e2e::PodSpec p;
          p.namespace_name = ns;
          p.name = PodName(i);
          // Both conventions ask in limits, which the API server copies into
          // the requests.
          if (flavor.node_lock) {
            p.limits = {{"nvidia.com/gpu", "1"},
                        {"nvidia.com/gpumem", std::to_string(HamiMiB(i))},
                        {"nvidia.com/gpucores", std::to_string(HamiCores(i))}};
          } else {
            p.limits = {{std::string(kGpuMem), std::to_string(GpushareGiB(i))}};
          }
          StatusOr<std::string> uid = e2e::CreatePod(cp(), p);
          if (uid.ok() && !uid->empty()) {
            uids[i] = *uid;
          } else {
            errors[t] = PodName(i) + ": " + (uid.ok() ? "no uid" : uid.status().ToString());
          }
        }
      });
    }
    for (std::thread& t : creators) t.join();
    for (const std::string& e : errors) ASSERT_TRUE(e.empty()) << e;
  }
  std::cout << "[ measured ] " << kNodes << " nodes and " << kPods << " pods created after "
            << Seconds(Clock::now() - test_start) << " s\n";

  // ---- Two replicas: a leads (it starts first), b follows with its cache
  // synced.
  Status started =
      StartReplica(0, [](SchedextProcess& p) { return HttpGet(p.port(), "/readyz").first == 200; });
  ASSERT_TRUE(started.ok()) << started.ToString();
  started = StartReplica(1, [](SchedextProcess& p) {
    return HttpGet(p.port(), "/readyz").second.find("is held by replica-a") != std::string::npos;
  });
  ASSERT_TRUE(started.ok()) << started.ToString();
  ASSERT_EQ(Lease()["spec"].value("holderIdentity", ""), "replica-a") << Lease().dump();
  const std::array<int, 2> ports = {replicas_[0]->port(), replicas_[1]->port()};
  const std::array<pid_t, 2> pids = {replicas_[0]->pid(), replicas_[1]->pid()};
  ASSERT_GT(pids[0], 0);
  ASSERT_GT(pids[1], 0);

  // HAMi's device plugin releases each node's lock once the pod named there
  // is bound.
  std::vector<std::unique_ptr<e2e::LockReleaser>> plugins;
  for (int n = 0; flavor.node_lock && n < kNodes; ++n) {
    plugins.push_back(
        std::make_unique<e2e::LockReleaser>(cp(), flavor.NodeName(n), milliseconds(10)));
  }

  // ---- The binds. Each client takes the next pod and binds it as
  // kube-scheduler would: a refusal (503, connection refused) is retried on
  // the other replica; a lost reply is retried on the same node (the bind may
  // have gone through: a retried bind of a bound pod is a success); a node
  // whose HAMi lock another pod holds is retried after a pause; any other
  // error sends the pod to the next node; no node left: unschedulable.
  std::atomic<int> next_pod{0};
  std::atomic<int> successes{0};
  std::atomic<int> killed{-1};
  std::atomic<int64_t> kill_at_ns{0};       // steady clock
  std::atomic<int64_t> kill_at_wall_ns{0};  // system clock
  std::vector<std::vector<Reply>> replies(kClients);
  std::vector<int> unresolved(kClients, 0);  // pods left when the bound passed
  const auto workload_start = Clock::now();
  const auto deadline = workload_start + kWorkloadBound;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      std::vector<Reply>& mine = replies[c];
      for (int pod = next_pod.fetch_add(1); pod < kPods; pod = next_pod.fetch_add(1)) {
        int node_try = 0;
        int request = 0;
        int refused_in_a_row = 0;
        bool done = false;
        while (!done && node_try < kNodes) {
          if (Clock::now() >= deadline) {
            ++unresolved[c];
            break;
          }
          const int node = (pod + node_try) % kNodes;
          const int replica = (pod + request++) % 2;
          const json args = {{"PodName", PodName(pod)},
                             {"PodNamespace", ns},
                             {"PodUID", uids[pod]},
                             {"Node", flavor.NodeName(node)}};
          Reply r = PostBind(ports[replica], flavor.bind_path, args.dump());
          r.pod = pod;
          r.node = node;
          r.replica = replica;
          const Outcome outcome = r.outcome;
          mine.push_back(std::move(r));
          switch (outcome) {
            case Outcome::kBound:
              done = true;
              if (successes.fetch_add(1) + 1 == flavor.kill_after_successes) {
                // kill -9 of the replica that just answered: the leader, by
                // PID, with the other clients' binds in flight.
                kill_at_wall_ns = WallClock::now().time_since_epoch().count();
                kill_at_ns = Clock::now().time_since_epoch().count();
                killed = replica;
                ::kill(pids[replica], SIGKILL);
              }
              break;
            case Outcome::kRefused:
              if (++refused_in_a_row >= 2) {
                refused_in_a_row = 0;
                std::this_thread::sleep_for(kBackoff);
              }
              break;
            case Outcome::kLost:
              refused_in_a_row = 0;
              std::this_thread::sleep_for(kBackoff);
              break;
            case Outcome::kError:
              refused_in_a_row = 0;
              ++node_try;
              break;
            case Outcome::kLocked:
              refused_in_a_row = 0;
              std::this_thread::sleep_for(kLockBackoff);
              break;
          }
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  std::vector<std::string> plugin_errors;
  for (const auto& plugin : plugins) {
    for (const std::string& e : plugin->errors()) plugin_errors.push_back(e);
  }
  plugins.clear();  // stops them
  EXPECT_TRUE(plugin_errors.empty()) << ::testing::PrintToString(plugin_errors);
  const double workload_seconds = Seconds(Clock::now() - workload_start);
  ASSERT_EQ(killed.load(), 0) << "the kill was not reached, or killed the follower";
  replicas_[0]->Kill();  // reaps it
  int left = 0;
  for (int u : unresolved) left += u;
  ASSERT_EQ(left, 0) << "pods still unresolved after " << Seconds(kWorkloadBound) << " s";
  const Clock::time_point kill_at{Clock::duration(kill_at_ns.load())};
  const WallClock::time_point kill_at_wall{WallClock::duration(kill_at_wall_ns.load())};

  std::vector<Reply> all;
  for (auto& v : replies) all.insert(all.end(), v.begin(), v.end());

  // ---- The lease: it changed hands once, from a to b, after the kill.
  const json lease = Lease();
  ASSERT_TRUE(lease.is_object()) << "no lease";
  EXPECT_EQ(lease["spec"].value("holderIdentity", ""), "replica-b") << lease.dump();
  EXPECT_EQ(lease["spec"].value("leaseTransitions", -1), 1) << lease.dump();
  const std::optional<WallClock::time_point> acquired =
      ParseMicroTime(lease["spec"].value("acquireTime", ""));
  ASSERT_TRUE(acquired.has_value()) << lease.dump();
  EXPECT_GT(*acquired, kill_at_wall) << "b took the lease before a was killed: " << lease.dump();

  // ---- Replies.
  std::map<int, const Reply*> success_of;  // pod -> its success
  std::set<int> lost_pods;                 // pods with a lost reply
  int bound_by[2] = {0, 0};
  int refused_by_follower_before_kill = 0;
  int refused_during_takeover = 0;  // after the kill, before b's first success
  int lost = 0;
  int errors = 0;
  int locked = 0;
  std::optional<Clock::time_point> first_after_kill;
  std::map<int, int> statuses;
  for (const Reply& r : all) {
    ++statuses[r.http_status];
    if (r.outcome == Outcome::kBound && r.replica == 1 && r.received > kill_at &&
        (!first_after_kill || r.received < *first_after_kill)) {
      first_after_kill = r.received;
    }
  }
  ASSERT_TRUE(first_after_kill.has_value()) << "the new leader bound nothing";
  for (const Reply& r : all) {
    switch (r.outcome) {
      case Outcome::kBound:
        EXPECT_EQ(success_of.count(r.pod), 0u) << PodName(r.pod) << " bound twice by the clients";
        success_of[r.pod] = &r;
        ++bound_by[r.replica];
        break;
      case Outcome::kRefused:
        if (r.replica == 1 && r.received < kill_at) ++refused_by_follower_before_kill;
        if (r.received > kill_at && r.received < *first_after_kill) ++refused_during_takeover;
        break;
      case Outcome::kLost:
        ++lost;
        lost_pods.insert(r.pod);
        break;
      case Outcome::kError:
        ++errors;
        break;
      case Outcome::kLocked:
        ++locked;
        break;
    }
    // The follower served nothing before it held the lease, and before the
    // kill it refused every bind, saying why.
    if (r.replica == 1 && r.received_wall < *acquired) {
      EXPECT_NE(r.outcome, Outcome::kBound)
          << PodName(r.pod) << ": the follower answered success before it led";
    }
    if (r.replica == 1 && r.received < kill_at && r.outcome != Outcome::kLost) {
      EXPECT_EQ(r.http_status, 503) << PodName(r.pod) << ": " << r.text;
      EXPECT_NE(r.text.find("not the leader: lease " + cp().options().schedext_namespace + "/" +
                            ns + " is held by replica-a"),
                std::string::npos)
          << r.text;
    }
    // Replies are 200 (success or an error saying why), 503 (refused), or
    // none at all; a 4xx/5xx would mean a malformed bind or a crash.
    if (r.http_status != 0) {
      EXPECT_TRUE(r.http_status == 200 || r.http_status == 503)
          << PodName(r.pod) << ": " << r.http_status << " " << r.text;
    }
  }
  EXPECT_GE(bound_by[0], flavor.kill_after_successes);
  EXPECT_GT(bound_by[1], 0);
  EXPECT_GT(refused_by_follower_before_kill, 0);

  // ---- The API server's view: Bindings from the audit log, pods as stored.
  // Every Binding create of a pod, from the audit log: answered 201, refused
  // (4xx: the pod was bound already), or neither — the requester died with
  // it in flight (a kill -9 mid-bind), so the API server may have stored it
  // without answering 201.
  struct Bindings {
    int created = 0;
    int unanswered = 0;
    std::vector<std::string> events;  // "<stage> <code>", for failure messages
    std::set<std::string> users;      // of those not refused
    std::optional<WallClock::time_point> created_at;
  };
  std::map<std::string, Bindings> bindings;  // pod name -> its Binding creates
  {
    std::istringstream lines(e2e::ReadWholeFile(audit_log()));
    for (std::string line; std::getline(lines, line);) {
      const json e = json::parse(line, nullptr, false);
      if (!e.is_object()) continue;
      const json ref = e.value("objectRef", json::object());
      if (ref.value("subresource", "") != "binding" || ref.value("namespace", "") != ns ||
          e.value("verb", "") != "create") {
        continue;
      }
      const std::string stage = e.value("stage", "");
      const int code = e.value("responseStatus", json::object()).value("code", 0);
      Bindings& b = bindings[ref.value("name", "")];
      b.events.push_back(stage + " " + std::to_string(code));
      if (code >= 400 && code < 500) continue;
      b.users.insert(e.value("user", json::object()).value("username", ""));
      if (code == 201 && stage == "ResponseComplete") {
        ++b.created;
        b.created_at = ParseMicroTime(e.value("requestReceivedTimestamp", ""));
      } else {
        ++b.unanswered;
      }
    }
  }
  StatusOr<ApiReply> listed =
      cp().AdminRequest("GET", "/api/v1/namespaces/" + ns + "/pods");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->status, 200) << listed->body;
  const json pods = json::parse(listed->body, nullptr, false);
  ASSERT_TRUE(pods.is_object() && pods["items"].is_array());
  ASSERT_EQ(pods["items"].size(), static_cast<size_t>(kPods));

  std::map<std::pair<std::string, int>, DeviceUse> device_use;  // (node, device)
  std::map<std::string, int> node_memory;
  int bound_pods = 0;
  int bound_without_success = 0;       // lost replies whose bind went through
  int lost_but_bound_by_the_dead = 0;  // ... then answered success on a retry
  int bound_unanswered = 0;            // by a Binding the API server stored but never answered
  for (const json& pod : pods["items"]) {
    const std::string name = pod["metadata"].value("name", "");
    const int index = std::stoi(name.substr(4));
    const std::string node = pod["spec"].value("nodeName", "");
    SCOPED_TRACE(name);
    const Bindings& b = bindings[name];
    const auto success = success_of.find(index);
    if (success != success_of.end()) {
      EXPECT_EQ(node, flavor.NodeName(success->second->node))
          << "answered success for another node";
      EXPECT_EQ(b.users, std::set<std::string>{cp().schedext_user()});
      // The dead leader's Binding (received before the kill, or never
      // answered; the clocks are the same machine's), confirmed by a retry
      // on the new leader.
      if (success->second->replica == 1 && lost_pods.count(index) != 0 &&
          (b.created == 0 || (b.created_at && *b.created_at < kill_at_wall))) {
        ++lost_but_bound_by_the_dead;
      }
    }
    if (node.empty()) {
      EXPECT_EQ(b.created, 0) << ::testing::PrintToString(b.events);
      continue;
    }
    ++bound_pods;
    // Bound exactly once: one Binding answered 201, or, when its requester
    // was killed with it in flight, one stored without an answer.
    EXPECT_LE(b.created, 1) << ::testing::PrintToString(b.events);
    EXPECT_GE(b.created + b.unanswered, 1)
        << "bound on " << node << " without a Binding: " << ::testing::PrintToString(b.events);
    if (b.created == 0) {
      ++bound_unanswered;
      EXPECT_EQ(lost_pods.count(index), 1u)
          << "bound on " << node << " by a Binding never answered, yet no reply to its bind "
          << "was lost: " << ::testing::PrintToString(b.events);
    }
    if (success == success_of.end()) {
      ++bound_without_success;
      EXPECT_EQ(lost_pods.count(index), 1u)
          << "bound on " << node << " though every bind of it was answered, none with success";
    }
    // The device annotations, as the device plugin reads them.
    const json a = pod["metadata"].value("annotations", json::object());
    int device = -1;
    DeviceUse use;
    ASSERT_NO_FATAL_FAILURE(ReadAllocation(a, node, index, device, use));
    DeviceUse& on_device = device_use[{node, device}];
    on_device.memory += use.memory;
    on_device.vgpus += use.vgpus;
    on_device.cores += use.cores;
    node_memory[node] += use.memory;
  }
  EXPECT_EQ(bound_pods, bound_by[0] + bound_by[1] + bound_without_success);
  const DeviceLimits& limits = flavor.device;
  int used = 0;
  int full_devices = 0;
  for (const auto& [device, u] : device_use) {
    const std::string where = device.first + " GPU " + std::to_string(device.second);
    EXPECT_LE(u.memory, limits.memory) << where << " holds " << u.memory << " of "
                                       << limits.memory;
    if (limits.vgpus > 0) {
      EXPECT_LE(u.vgpus, limits.vgpus) << where << " vGPUs";
    }
    if (limits.cores > 0) {
      EXPECT_LE(u.cores, limits.cores) << where << " cores";
    }
    used += u.memory;
    full_devices += u.memory == limits.memory || (limits.vgpus > 0 && u.vgpus == limits.vgpus) ||
                            (limits.cores > 0 && u.cores == limits.cores)
                        ? 1
                        : 0;
  }
  for (const auto& [node, memory] : node_memory) {
    EXPECT_LE(memory, kDevicesPerNode * limits.memory) << node;
  }
  // Node-level too: CPU, memory, pods, and the devices' counts (gpushare's
  // gpu-mem, HAMi's nvidia.com/gpu vGPUs).
  const std::vector<std::string> over =
      e2e::OverAllocatedNodes(cp(), {"nvidia.com/gpumem", "nvidia.com/gpucores"});
  EXPECT_TRUE(over.empty()) << ::testing::PrintToString(over);

  std::cout << "[ measured ] " << all.size() << " bind requests from " << kClients << " clients in "
            << workload_seconds << " s: " << bound_pods << " of " << kPods << " pods bound ("
            << bound_by[0] << " by the killed leader, " << bound_by[1] << " by the new one, "
            << bound_without_success << " bound without a success reply), " << lost
            << " replies lost (" << lost_but_bound_by_the_dead
            << " of those binds had gone through: a retry on the new leader answered success; "
            << bound_unanswered << " by a Binding the API server never answered), " << errors
            << " bind errors (no room on that node), " << refused_by_follower_before_kill
            << " refused by the follower before the kill\n";
  std::cout << "[ measured ] kill -9 of the leader with binds in flight -> first successful bind "
               "on the new leader after "
            << Seconds(*first_after_kill - kill_at) << " s; " << refused_during_takeover
            << " binds refused meanwhile (503 or connection refused); lease acquired "
            << std::chrono::duration<double>(*acquired - kill_at_wall).count()
            << " s after the kill\n";
  std::cout << "[ measured ] " << flavor.name << ": GPU memory bound: " << used << " of "
            << kNodes * kDevicesPerNode * limits.memory << (flavor.node_lock ? " MiB (" : " GiB (")
            << full_devices << " of " << kNodes * kDevicesPerNode
            << " devices full in memory, vGPUs or cores, none over); " << locked
            << " binds waited for a node lock; HTTP statuses:";
  for (const auto& [status, count] : statuses) std::cout << " " << status << "×" << count;
  std::cout << "\n";

  // The new leader drains cleanly on SIGTERM.
  replicas_[1]->Stop();
  EXPECT_EQ(replicas_[1]->exit_code(), 0) << FileTail(replicas_[1]->log_path());
  std::cout << "[ measured ] whole test " << Seconds(Clock::now() - test_start) << " s\n";
}

INSTANTIATE_TEST_SUITE_P(Conventions, GpuFailoverTest, ::testing::Values(Gpushare(), Hami()),
                         [](const ::testing::TestParamInfo<Flavor>& p) { return p.param.name; });

}  // namespace
}  // namespace schedext::testing
