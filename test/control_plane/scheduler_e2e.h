// Support for the end-to-end tests: the real kube-scheduler schedules through
// the real schedext binary, both against the real kube-apiserver of a
// ControlPlane (testing/control_plane.h).
//
//   SchedextProcess schedext;
//   ASSERT_TRUE(schedext.Start(dir, config_yaml, cp.schedext_kubeconfig()).ok());
//   auto config = SchedulerConfigFromDeploy(cp, "deploy/scheduler/kube-scheduler-config-"
//                                           "nodecache.yaml", {.url_prefix = schedext.url()});
//   cp.StartScheduler(*config);
//   CreateReadyNode(cp, {.name = "n1", .capacity = {{"cpu", "2"}}});
//   cp.Create("/api/v1/namespaces/ns/pods", PodJson({.name = "p", ...}));
//   WaitForNodeNames(cp, "ns", {"p"}, ...);
//
// The scheduler configurations are the shipped files of deploy/scheduler/,
// read and edited only where a test cluster differs (urlPrefix, leader
// election, the scheduler's kubeconfig) or where the test says so.
//
// Thread-safety: none needed; the tests drive everything from one thread.
#ifndef SCHEDEXT_TEST_CONTROL_PLANE_SCHEDULER_E2E_H_
#define SCHEDEXT_TEST_CONTROL_PLANE_SCHEDULER_E2E_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/status.h"
#include "testing/control_plane.h"

namespace schedext::testing::e2e {

// The scheduler profile of every shipped configuration.
inline constexpr std::string_view kSchedulerName = "schedext-scheduler";

// The schedext binary as a child process (own process group, SIGKILL when the
// thread that started it dies), its output in a log file.
class SchedextProcess {
 public:
  SchedextProcess() = default;
  ~SchedextProcess() { Stop(); }
  SchedextProcess(const SchedextProcess&) = delete;
  SchedextProcess& operator=(const SchedextProcess&) = delete;

  // Writes `config_yaml` to `dir`, starts SCHEDEXT_BINARY with --config, the
  // kubeconfig, --listen 127.0.0.1:0 and `extra_args`, reads the port from
  // its "listening on" line, then waits until `ready(*this)` holds (default:
  // plain GET /readyz answers 200, i.e. its informers have synced). Bounded
  // by `timeout`; the error carries the log's tail. `extra_env` ("NAME=value")
  // is added to the test's environment.
  Status Start(const std::string& dir, std::string_view config_yaml, const std::string& kubeconfig,
               const std::vector<std::string>& extra_args = {},
               const std::vector<std::string>& extra_env = {},
               std::function<bool(SchedextProcess&)> ready = {},
               std::chrono::seconds timeout = std::chrono::seconds(60));
  // The binary the next Start runs (SCHEDEXT_BINARY unless set): a benchmark
  // compares two builds with it.
  void set_binary(std::string path) { binary_ = std::move(path); }
  // SIGTERM, then SIGKILL after a bound; reaps. Idempotent.
  void Stop();
  // SIGKILL at once (a crash: nothing is drained, no lease released); reaps.
  // Idempotent.
  void Kill();
  // How it ended (exit code, or 128 + signal; -1 while running or never
  // started): 0 after a clean SIGTERM drain, non-zero when it crashed, was
  // killed, or (under ASan) leaked.
  int exit_code() const { return exit_code_; }

  bool running();
  // The process id while it runs (-1 before Start and once reaped), for a
  // test that signals it from another thread; Stop/Kill still reap it.
  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  // The port of its status listener (server.statusListen), read from its
  // "status listener on" line; 0 when it has none.
  int status_port();
  // "http://127.0.0.1:<port>".
  std::string url() const;
  const std::string& log_path() const { return log_path_; }
  const std::string& config_path() const { return config_path_; }

 private:
  std::string binary_ = SCHEDEXT_BINARY;
  pid_t pid_ = -1;
  int port_ = 0;
  int status_port_ = 0;
  int exit_code_ = -1;
  int starts_ = 0;
  std::string log_path_;
  std::string config_path_;
};

// The last `bytes` of a file ("" when unreadable), cut at a line start.
std::string FileTail(const std::string& path, size_t bytes = 3000);
std::string ReadWholeFile(const std::string& path);

// Plain-HTTP GET of 127.0.0.1:port/path: the status (0 when nothing answered)
// and body.
std::pair<int, std::string> HttpGet(int port, std::string_view path);

// schedext_requests_total{profile, verb, outcome} from its /metrics (-1 when
// unreadable or absent).
int64_t RequestCount(int port, std::string_view profile, std::string_view verb,
                     std::string_view outcome = "ok");

// TLS material for the extender entry (kube-scheduler's tlsConfig).
struct ExtenderTls {
  std::string ca_file;
  std::string cert_file;  // empty: no client certificate
  std::string key_file;
};

// How a test's scheduler configuration differs from the shipped file.
struct SchedulerEdits {
  // The extender's urlPrefix (schedext's URL, plus "/<profile>").
  std::string url_prefix;
  std::optional<bool> node_cache_capable;
  // The extender's httpTimeout (a Go duration, "1s").
  std::optional<std::string> http_timeout;
  // false: drop bindVerb (the scheduler's own binder binds); true: bindVerb: bind.
  std::optional<bool> bind;
  // Replaces managedResources when set: {name, ignoredByScheduler}.
  std::optional<std::vector<std::pair<std::string, bool>>> managed_resources;
  // enableHTTPS: true with this tlsConfig.
  std::optional<ExtenderTls> tls;
  // The extender's `ignorable`.
  std::optional<bool> ignorable;
  // No extenders at all: kube-scheduler alone, for the counterfactual.
  bool drop_extenders = false;
  // Every in-tree score plugin off (plugins.score.disabled: "*"): the
  // extender's priorities alone rank the feasible nodes.
  bool disable_in_tree_scoring = false;
  // kube-scheduler's NodeResourcesFit off (preFilter and filter): schedext's
  // own NodeResourcesFit alone decides whether a pod's requests fit.
  bool disable_in_tree_fit = false;
};

// `deploy_file` (relative to the source tree) as a KubeSchedulerConfiguration
// for this control plane: leaderElection off, clientConnection.kubeconfig =
// the scheduler's, and `edits` applied to its single extender.
StatusOr<std::string> SchedulerConfigFromDeploy(const ControlPlane& cp,
                                                std::string_view deploy_file,
                                                const SchedulerEdits& edits);

// A source-tree file's content.
StatusOr<std::string> ReadSourceFile(std::string_view relative_path);

// `yaml` with the maps of `overlay` merged in, recursively (overlay wins).
StatusOr<std::string> MergeYaml(std::string_view yaml, std::string_view overlay);

// `yaml` (a schedext configuration, e.g. deploy/base/schedext.yaml) with
// `policy_yaml` (one policy entry as a YAML map) inserted at the start of the
// policies of profile `profile`.
StatusOr<std::string> WithPolicy(std::string_view yaml, std::string_view profile,
                                 std::string_view policy_yaml);

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, NoExecute, PreferNoSchedule
};

struct NodeSpec {
  std::string name;
  // capacity = allocatable; "pods" defaults to 110.
  std::map<std::string, std::string> capacity;
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  // The Ready condition's status: "True", or "False" for a node whose
  // kubelet reports it not ready (no controller taints it here).
  std::string ready = "True";
};

// Creates the Node with its Ready condition and capacity, then sets its
// taints to exactly `spec.taints` (removing the not-ready taint admission
// adds, which no node-lifecycle controller removes here) and its status
// through the status subresource; returns once the node reads back as such.
Status CreateReadyNode(const ControlPlane& cp, const NodeSpec& spec);

struct PodSpec {
  std::string namespace_name;
  std::string name;
  std::string scheduler_name = std::string(kSchedulerName);
  std::map<std::string, std::string> requests;
  std::map<std::string, std::string> limits;
  std::map<std::string, std::string> node_selector;
  std::string priority_class;
  std::string node_name;  // bound at create (bypasses the scheduler)
};

// A Pod of one pause container, terminationGracePeriodSeconds 0 (so a
// preemption victim or a deleted pod is gone at once without a kubelet).
std::string PodJson(const PodSpec& spec);
// Creates it; its uid.
StatusOr<std::string> CreatePod(const ControlPlane& cp, const PodSpec& spec);

// The pod as the API server has it (null when absent).
nlohmann::json GetPod(const ControlPlane& cp, std::string_view ns, std::string_view name);
// All pods of `ns` (empty on error).
std::vector<nlohmann::json> ListPods(const ControlPlane& cp, std::string_view ns);

// Polls until every pod of `names` has a spec.nodeName, or `timeout`: name ->
// node of those bound (so a caller can report the missing ones).
std::map<std::string, std::string> WaitForNodeNames(const ControlPlane& cp, std::string_view ns,
                                                    const std::vector<std::string>& names,
                                                    std::chrono::milliseconds timeout);

// Polls until the pod has PodScheduled=False with reason Unschedulable (the
// scheduler gave up on it for now): that condition's message, or nullopt.
std::optional<std::string> WaitUnschedulable(const ControlPlane& cp, std::string_view ns,
                                             std::string_view name,
                                             std::chrono::milliseconds timeout);

// Polls until the pod has PodScheduled=False for any reason (Unschedulable,
// SchedulerError): {reason, message}, or nullopt.
std::optional<std::pair<std::string, std::string>> WaitNotScheduled(
    const ControlPlane& cp, std::string_view ns, std::string_view name,
    std::chrono::milliseconds timeout);

// The messages of the pod's FailedScheduling events.
std::vector<std::string> FailedSchedulingEvents(const ControlPlane& cp, std::string_view ns,
                                                std::string_view name);

// Every node whose bound pods request more than its allocatable of some
// resource (pods counted too), described; empty when nothing is over-allocated.
// `per_device`: resources no node advertises because their device plugin
// accounts them per device (HAMi's nvidia.com/gpumem and gpucores): skipped.
std::vector<std::string> OverAllocatedNodes(const ControlPlane& cp,
                                            const std::set<std::string>& per_device = {});

// A Kubernetes quantity ("500m", "2", "64Mi", "1.5Gi") in thousandths of its
// unit; nullopt when not understood.
std::optional<int64_t> MilliValue(std::string_view quantity);

// Who created each pod's Binding in `ns`, from kube-apiserver's audit log
// (pods/binding create answered 201): pod name -> user name.
std::map<std::string, std::string> BindingUsers(const std::string& audit_log, std::string_view ns);

// Files and flags for a kube-apiserver audit log of pods/binding creates,
// written under `dir`: appended to ControlPlaneOptions::apiserver_flags.
StatusOr<std::vector<std::string>> BindingAuditFlags(const std::string& dir,
                                                     std::string* audit_log_path);

// A fresh directory under the test temp directory (removed by the caller).
StatusOr<std::string> MakeTempDir(std::string_view prefix);
void RemoveTree(const std::string& dir);

// Deletes every pod of `ns` (grace 0) and waits (bounded) until none is left;
// deletes `nodes`.
void DeletePodsAndNodes(const ControlPlane& cp, std::string_view ns,
                        const std::vector<std::string>& nodes);

// Creates a PriorityClass (an existing one of that name is fine).
Status EnsurePriorityClass(const ControlPlane& cp, std::string_view name, int value);

}  // namespace schedext::testing::e2e

#endif  // SCHEDEXT_TEST_CONTROL_PLANE_SCHEDULER_E2E_H_
