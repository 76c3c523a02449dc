// ControlPlane: a real Kubernetes control plane for tests — etcd, kube-apiserver
// and, on request, kube-scheduler — on free loopback ports, with a temporary
// directory holding etcd's data, a PKI generated at run time (testing/pki.h),
// static token users and their kubeconfigs, and every process's log.
//
//   auto binaries = FindControlPlaneBinaries();
//   if (!binaries.ok()) GTEST_SKIP() << binaries.status().message();   // see below for CI
//   ControlPlane cp(*binaries);
//   ASSERT_TRUE(cp.Start().ok());            // etcd, kube-apiserver ready, RBAC applied
//   auto config = LoadKubeconfig(cp.schedext_kubeconfig());   // schedext's identity
//   ...
//   cp.KillApiServer();  cp.StartApiServer();   // same etcd, port, PKI and tokens
//   auto sched = cp.StartScheduler(cp.SchedulerConfigHeader() + "profiles: ...");
//
// Users (token file; the kubeconfigs point at the server with its CA):
//   * admin        — group system:masters             (admin_kubeconfig)
//   * admin-cert   — client certificate, O=system:masters (admin_cert_kubeconfig)
//   * system:kube-scheduler — the bootstrap ClusterRole of that name (scheduler_kubeconfig)
//   * system:serviceaccount:<ns>:<sa> in groups system:serviceaccounts and
//     system:serviceaccounts:<ns> — schedext's ServiceAccount, authorised by
//     nothing but the RBAC manifests of ControlPlaneOptions::rbac_manifests
//     (deploy/base and deploy/gpushare by default), applied with kubectl as
//     admin at Start (schedext_kubeconfig).
//
// Processes: each child is started with fork/execve into its own process
// group with PR_SET_PDEATHSIG(SIGKILL), so a test process that dies (crash,
// ctest timeout) takes its children with it. PR_SET_PDEATHSIG fires when the
// *thread* that forked exits: call Start/StartApiServer/StartScheduler from a
// thread that lives as long as the control plane (the test's main thread, as
// SetUpTestSuite and test bodies are). Stop() and the destructor stop
// everything started, by PID (SIGTERM, then SIGKILL after a bound), and
// remove the directory — unless $SCHEDEXT_KEEP_CONTROL_PLANE_DIR is set, for
// debugging.
//
// Every wait is bounded (ControlPlaneOptions::start_timeout, and the timeouts
// given to the helpers). On a start failure the Status carries the tail of
// the failing process's log.
//
// Thread-safety: not thread-safe; drive it from one thread. Tests may use the
// kubeconfigs and the API server from any number of threads meanwhile.
#ifndef SCHEDEXT_TEST_TESTING_CONTROL_PLANE_H_
#define SCHEDEXT_TEST_TESTING_CONTROL_PLANE_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/status.h"

namespace schedext::testing {

// Paths of the binaries. kube_scheduler may be empty (not found): only
// StartScheduler needs it.
struct ControlPlaneBinaries {
  std::string etcd;
  std::string kube_apiserver;
  std::string kube_scheduler;
  std::string kubectl;
  // Where they were found, for logs ("KUBEBUILDER_ASSETS=/x", ...).
  std::string source;
};

// Finds the binaries, in this order:
//   1. $KUBEBUILDER_ASSETS (the envtest convention): kube-apiserver, etcd and
//      kubectl there (kube-scheduler too, when present);
//   2. otherwise kube-apiserver and kube-scheduler in $SCHEDEXT_K8S_BIN_DIR,
//      or else in the folder the build unpacked ../shared/k8s into (the
//      compile definition SCHEDEXT_K8S_BIN_DIR), etcd at /usr/bin/etcd or on
//      PATH, kubectl on PATH.
// A kube-scheduler on its own can also be given by $SCHEDEXT_KUBE_SCHEDULER.
// When $SCHEDEXT_K8S_VERSION is a minor ("1.37"; ctest sets it and the folder
// for each registration of a suite), both binaries' `--version` must be of it.
// kNotFound with a message saying what is missing (or of which version it is)
// and how to get it.
StatusOr<ControlPlaneBinaries> FindControlPlaneBinaries();

// True when $CI is "true" (as GitHub Actions, GitLab and .ci/run set it):
// missing binaries must then fail the test instead of skipping it.
bool ControlPlaneRequired();

// `<binary> --version`'s first line ("Kubernetes v1.26.7"), or the error.
StatusOr<std::string> BinaryVersion(const std::string& binary);

// The minor of such a line (26 for "Kubernetes v1.26.4-ocp-microshift-4.13"),
// or -1 when it is not one: for the tests whose expectations differ between
// the minors of tools/k8s/versions.
int KubernetesMinor(std::string_view version_line);

struct ControlPlaneOptions {
  // Extra kube-apiserver flags, e.g. "--max-requests-inflight=3"
  // or "--watch-cache=false". Appended after the fixture's own.
  std::vector<std::string> apiserver_flags;
  // schedext's ServiceAccount identity.
  std::string schedext_namespace = "schedext-system";
  std::string schedext_service_account = "schedext";
  // Manifests applied (kubectl apply -f, as admin) at Start, relative to the
  // source tree or absolute. The defaults are exactly what deploy/gpushare
  // (deploy/base + its RBAC) grants schedext's ServiceAccount.
  std::vector<std::string> rbac_manifests = {"deploy/base/namespace.yaml",
                                             "deploy/base/serviceaccount.yaml",
                                             "deploy/base/rbac.yaml", "deploy/gpushare/rbac.yaml"};
  // Namespaces created at Start (with their `default` ServiceAccount, which
  // admission requires before pods can be created and which no
  // controller-manager creates here). "default" exists already but lacks the
  // ServiceAccount.
  std::vector<std::string> namespaces = {"default"};
  // Bound of each start: etcd healthy, kube-apiserver /readyz, RBAC applied,
  // kube-scheduler /healthz.
  std::chrono::seconds start_timeout{90};
};

// One kube-scheduler started by StartScheduler.
struct SchedulerProcess {
  pid_t pid = -1;
  int secure_port = 0;      // its /healthz, /metrics (HTTPS, self-signed)
  std::string config_path;  // the KubeSchedulerConfiguration written
  std::string log_path;     // its stdout + stderr
};

// An answer of the API server to ControlPlane::AdminRequest.
struct ApiReply {
  int status = 0;
  std::string body;
};

// Result of RunCommand.
struct CommandResult {
  int exit_code = -1;  // -1: killed by a signal or by the timeout
  std::string output;  // stdout and stderr, interleaved
};

// Runs argv[0] (a path; PATH is not searched) with `stdin_text` on its
// standard input, bounded by `timeout` (then SIGKILLed). kInternal when it
// cannot be started; a non-zero exit is a result, not an error.
StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                   std::string_view stdin_text = {},
                                   std::chrono::milliseconds timeout = std::chrono::seconds(60));

class ControlPlane {
 public:
  explicit ControlPlane(ControlPlaneBinaries binaries, ControlPlaneOptions options = {});
  ~ControlPlane();  // Stop()
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // Creates the directory and PKI, starts etcd and kube-apiserver, waits for
  // /readyz, applies the RBAC manifests and creates the namespaces. Logs
  // (to stderr) where the binaries are and their versions. Call once.
  Status Start();
  // Stops the scheduler, kube-apiserver and etcd (whatever runs) and removes
  // the directory. Idempotent.
  void Stop();

  // --- kube-apiserver lifecycle, on the same etcd, port and PKI.
  // SIGKILL (a crash: connections are reset, nothing is drained) and reap.
  void KillApiServer();
  // Starts it again (after KillApiServer) and waits for /readyz.
  Status StartApiServer();
  bool api_server_running() const;

  // --- etcd.
  // etcd's current revision (the newest resourceVersion).
  StatusOr<int64_t> EtcdRevision() const;
  // Compacts etcd's history up to its current revision (physically) and
  // returns that revision: every older resourceVersion is gone from etcd
  // (kube-apiserver's watch cache keeps its own window; see the tests).
  StatusOr<int64_t> CompactEtcd();
  // Deletes `key` (e.g. "/registry/pods/default/p1") in etcd directly,
  // behind kube-apiserver's back. True when a key was deleted.
  StatusOr<bool> DeleteEtcdKey(std::string_view key);

  // --- kube-scheduler.
  // The start of a KubeSchedulerConfiguration (apiVersion v1) that connects
  // as system:kube-scheduler and does not elect a leader; append
  // `profiles:` / `extenders:` to it.
  std::string SchedulerConfigHeader() const;
  // Writes `config_yaml` (every "{{kubeconfig}}" replaced by
  // scheduler_kubeconfig()) and starts kube-scheduler with it plus
  // `extra_flags`, then waits for its /healthz. One at a time: a second call
  // stops the first scheduler. kNotFound without a kube-scheduler binary;
  // kUnavailable (with its log's tail) when it exits or is not healthy in time.
  StatusOr<SchedulerProcess> StartScheduler(std::string_view config_yaml,
                                            const std::vector<std::string>& extra_flags = {});
  // Stops it (SIGTERM, then SIGKILL) by PID. Idempotent.
  void StopScheduler();
  const SchedulerProcess& scheduler() const { return scheduler_; }

  // --- Setup calls as admin, on a fresh connection each (independent of
  // schedext's client, so a test's setup never depends on the code under
  // test): `method` GET/POST/PUT/PATCH/DELETE, `body` JSON (PATCH: a merge
  // patch). kUnavailable on a transport failure; any HTTP status is a reply.
  StatusOr<ApiReply> AdminRequest(std::string_view method, std::string_view path,
                                  std::string_view body = {}) const;
  // POST `object_json` to `collection_path`; an error unless 201. Returns the
  // created object.
  StatusOr<std::string> Create(std::string_view collection_path,
                               std::string_view object_json) const;
  // DELETE `path` with gracePeriodSeconds=0; an error unless 200 (or 404
  // with `missing_ok`).
  Status Delete(std::string_view path, bool missing_ok = false) const;

  // --- kubectl as admin: `kubectl --kubeconfig <admin> <args...>`.
  StatusOr<CommandResult> Kubectl(const std::vector<std::string>& args,
                                  std::string_view stdin_text = {}) const;
  // kubectl apply -f - of `yaml`; an error with kubectl's output when it fails.
  Status Apply(std::string_view yaml) const;
  // A namespace with its default ServiceAccount (idempotent).
  Status CreateNamespace(std::string_view name) const;

  // --- Where things are.
  const ControlPlaneBinaries& binaries() const { return binaries_; }
  const ControlPlaneOptions& options() const { return options_; }
  const std::string& dir() const { return dir_; }
  // "https://127.0.0.1:<port>".
  std::string url() const;
  int api_server_port() const { return api_port_; }
  // "http://127.0.0.1:<port>".
  std::string etcd_url() const;
  const std::string& ca_pem() const { return ca_pem_; }
  std::string ca_file() const;
  std::string admin_kubeconfig() const;
  std::string admin_cert_kubeconfig() const;
  std::string scheduler_kubeconfig() const;
  std::string schedext_kubeconfig() const;
  const std::string& admin_token() const { return admin_token_; }
  const std::string& schedext_token() const { return schedext_token_; }
  // "system:serviceaccount:<ns>:<sa>".
  std::string schedext_user() const;
  std::string api_server_log() const;
  std::string etcd_log() const;
  // `--version` of the binaries, read at Start ("" before).
  const std::string& api_server_version() const { return api_server_version_; }
  const std::string& scheduler_version() const { return scheduler_version_; }

 private:
  Status StartEtcd();
  Status WriteFiles();
  Status ApplyRbac();
  Status WaitApiServerReady(pid_t pid);
  std::vector<std::string> ApiServerArgs() const;

  const ControlPlaneBinaries binaries_;
  const ControlPlaneOptions options_;
  std::string dir_;
  std::string ca_pem_;
  std::string admin_token_;
  std::string scheduler_token_;
  std::string schedext_token_;
  std::string api_server_version_;
  std::string scheduler_version_;
  int etcd_port_ = 0;
  int etcd_peer_port_ = 0;
  int api_port_ = 0;
  pid_t etcd_pid_ = -1;
  pid_t api_pid_ = -1;
  SchedulerProcess scheduler_;
  int scheduler_starts_ = 0;  // names each start's config and log files
  bool started_ = false;
};

}  // namespace schedext::testing

#endif  // SCHEDEXT_TEST_TESTING_CONTROL_PLANE_H_
