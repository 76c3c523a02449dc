// E2eSuite: the gtest base of the end-to-end suites (scheduler_e2e_test.cc,
// gpushare_e2e_test.cc). On top of ControlPlaneSuite's shared control plane
// it keeps, for the whole suite, one schedext process (started from a
// configuration the suite gives) and kube-apiserver's audit log of Bindings;
// each test gets a namespace of its own, and its pods and nodes are deleted
// when it ends. On failure the tails of kube-scheduler's and schedext's logs
// are printed.
//
//   class MyE2eTest : public E2eSuite {
//    protected:
//     static void SetUpTestSuite() { StartE2e({}, [] { return ReadSourceFile("x.yaml"); }); }
//   };
#ifndef SCHEDEXT_TEST_CONTROL_PLANE_E2E_SUITE_H_
#define SCHEDEXT_TEST_CONTROL_PLANE_E2E_SUITE_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "control_plane/control_plane_suite.h"
#include "control_plane/scheduler_e2e.h"

namespace schedext::testing::e2e {

inline constexpr std::string_view kTestLabel = "e2e.schedext.io/test";
inline constexpr std::string_view kNodeLabel = "e2e.schedext.io/node";
inline constexpr std::chrono::seconds kScheduleTimeout{60};

class E2eSuite : public ControlPlaneSuite {
 protected:
  struct Shared {
    std::string dir;
    std::string audit_log;
    std::unique_ptr<SchedextProcess> schedext;
    Status setup = InternalError("suite not set up");
    int namespaces = 0;
  };
  static Shared& shared() {
    static Shared s;
    return s;
  }

  // Starts the control plane (with the audit log added to `options`), runs
  // `before_schedext` (cluster objects schedext needs at start), then schedext
  // with the configuration `schedext_config` returns, ready when `ready` says
  // so (default: GET /readyz on its port answers 200).
  static void StartE2e(ControlPlaneOptions options,
                       const std::function<StatusOr<std::string>()>& schedext_config,
                       const std::function<Status()>& before_schedext = {},
                       std::function<bool(SchedextProcess&)> ready = {}) {
    Shared& s = shared();
    s = Shared{};
    StatusOr<std::string> dir = MakeTempDir("schedext-e2e-");
    if (!dir.ok()) {
      s.setup = dir.status();
      return;
    }
    s.dir = *dir;
    StatusOr<std::vector<std::string>> audit = BindingAuditFlags(s.dir, &s.audit_log);
    if (!audit.ok()) {
      s.setup = audit.status();
      return;
    }
    options.apiserver_flags.insert(options.apiserver_flags.end(), audit->begin(), audit->end());
    StartSharedControlPlane(std::move(options));
    // Without binaries, or when the start failed, SetUp reports why.
    if (!FindControlPlaneBinaries().ok() || !cp().api_server_running()) return;
    if (before_schedext) {
      s.setup = before_schedext();
      if (!s.setup.ok()) return;
    }
    StatusOr<std::string> config = schedext_config();
    // The shipped status listener is 0.0.0.0:8889: here loopback, any port.
    if (config.ok()) config = MergeYaml(*config, "server:\n  statusListen: \"127.0.0.1:0\"\n");
    if (!config.ok()) {
      s.setup = config.status();
      return;
    }
    s.schedext = std::make_unique<SchedextProcess>();
    // As deploy/base/deployment.yaml does (the Downward API): the leader
    // election Lease lives in schedext's own namespace, where its Role is.
    s.setup =
        s.schedext->Start(s.dir, *config, cp().schedext_kubeconfig(), {},
                          {"POD_NAMESPACE=" + cp().options().schedext_namespace}, std::move(ready));
  }

  static void TearDownTestSuite() {
    Shared& s = shared();
    if (s.schedext && s.schedext->running()) {
      // A clean drain: exit 0 (a crash, a hang past the bound, or a leak
      // under ASan would not be).
      s.schedext->Stop();
      EXPECT_EQ(s.schedext->exit_code(), 0) << "schedext did not exit cleanly on SIGTERM:\n"
                                            << FileTail(s.schedext->log_path());
    }
    s.schedext.reset();
    ControlPlaneSuite::TearDownTestSuite();
    if (std::getenv("SCHEDEXT_KEEP_CONTROL_PLANE_DIR") == nullptr) RemoveTree(s.dir);
  }

  void SetUp() override {
    ControlPlaneSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (cp().binaries().kube_scheduler.empty()) {
      if (ControlPlaneRequired()) FAIL() << "CI=true and no kube-scheduler binary";
      GTEST_SKIP() << "no kube-scheduler binary";
    }
    ASSERT_TRUE(shared().setup.ok()) << shared().setup.ToString();
    ASSERT_TRUE(schedext().running()) << FileTail(schedext().log_path());
    ns_ = "e2e-" + std::to_string(++shared().namespaces);
    const Status created = cp().CreateNamespace(ns_);
    ASSERT_TRUE(created.ok()) << created.ToString();
  }

  void TearDown() override {
    if (!has_cp()) return;  // SetUp failed for want of binaries: nothing ran
    if (HasFailure()) DumpLogs();
    if (!ns_.empty()) DeletePodsAndNodes(cp(), ns_, nodes_);
  }

  static void DumpLogs() {
    // kube-scheduler repeats a harmless complaint about the API server's
    // missing requestheader CA (no front proxy here) several times a
    // second; the tail is about everything else.
    std::string scheduler_log;
    std::istringstream lines(ReadWholeFile(cp().scheduler().log_path));
    for (std::string line; std::getline(lines, line);) {
      if (line.find("requestheader-client-ca-file") == std::string::npos) {
        scheduler_log += line + "\n";
      }
    }
    if (scheduler_log.size() > 3000)
      scheduler_log = "[...]" + scheduler_log.substr(scheduler_log.size() - 3000);
    std::cerr << "---- kube-scheduler log (tail) ----\n"
              << scheduler_log << "\n---- schedext log (tail) ----\n"
              << (shared().schedext ? FileTail(shared().schedext->log_path()) : "") << "\n";
  }

  static SchedextProcess& schedext() { return *shared().schedext; }

  // Restarts kube-scheduler with `deploy_file` as edited; urlPrefix defaults
  // to schedext's URL plus `profile_path` ("" or "/<profile>"). From 1.33 on,
  // with --feature-gates=SchedulerPopFromBackoffQ=false, as
  // docs/kubernetes-versions.md tells users to run it: with the gate on, a pod
  // schedext rejected is retried the moment the scheduler sees the event that
  // freed room (a pod deleted), before schedext's own watch has delivered it,
  // and is refused again and left until some later event.
  // `extra_flags` are added to kube-scheduler's command line.
  static void StartScheduler(std::string_view deploy_file, SchedulerEdits edits,
                             std::string_view profile_path = "",
                             std::vector<std::string> extra_flags = {}) {
    if (edits.url_prefix.empty()) edits.url_prefix = schedext().url() + std::string(profile_path);
    auto config = SchedulerConfigFromDeploy(cp(), deploy_file, edits);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    std::vector<std::string> flags = std::move(extra_flags);
    if (KubernetesMinor(cp().scheduler_version()) >= 33) {
      flags.push_back("--feature-gates=SchedulerPopFromBackoffQ=false");
    }
    auto started = cp().StartScheduler(*config, flags);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
  }

  // A Ready node of this test, named <ns>-<suffix>, labelled
  // kTestLabel=<ns> and kNodeLabel=<name>.
  void AddNode(const std::string& suffix, std::map<std::string, std::string> capacity,
               std::map<std::string, std::string> labels = {}, std::vector<Taint> taints = {},
               std::string ready = "True") {
    const std::string name = Node(suffix);
    labels[std::string(kTestLabel)] = ns_;
    labels[std::string(kNodeLabel)] = name;
    nodes_.push_back(name);
    const Status s = CreateReadyNode(
        cp(), {name, std::move(capacity), std::move(labels), std::move(taints), std::move(ready)});
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  std::string Node(const std::string& suffix) const { return ns_ + "-" + suffix; }

  // A pod of this test, kept to this test's nodes by a nodeSelector.
  PodSpec Pod(const std::string& name, std::map<std::string, std::string> requests) const {
    PodSpec p;
    p.namespace_name = ns_;
    p.name = name;
    p.requests = std::move(requests);
    p.node_selector = {{std::string(kTestLabel), ns_}};
    return p;
  }
  // A GpuShare pod of `gib` GiB (aliyun.com/gpu-mem) bound to `node` at
  // creation, its GPU memory counted on `device` (the index annotation
  // schedext's bind writes).
  void CreateBoundGpuPod(const std::string& name, const std::string& node, int device, int gib) {
    PodSpec p = Pod(name, {{"cpu", "10m"}});
    p.limits = {{"aliyun.com/gpu-mem", std::to_string(gib)}};
    p.node_name = node;
    nlohmann::json pod = nlohmann::json::parse(PodJson(p));
    pod["metadata"]["annotations"] = {{"ALIYUN_COM_GPU_MEM_IDX", std::to_string(device)},
                                      {"ALIYUN_COM_GPU_MEM_POD", std::to_string(gib)},
                                      {"ALIYUN_COM_GPU_MEM_DEV", "8"},
                                      {"ALIYUN_COM_GPU_MEM_ASSIGNED", "true"}};
    const auto created = cp().Create("/api/v1/namespaces/" + ns_ + "/pods", pod.dump());
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }
  void Create(const PodSpec& spec) {
    auto uid = CreatePod(cp(), spec);
    ASSERT_TRUE(uid.ok()) << uid.status().ToString();
  }

  // Who created each Binding of this test's namespace, once every pod of
  // `pods` has one or 10 s passed. The API server writes a Binding's
  // ResponseComplete event after etcd has the nodeName, so a test that saw its
  // pods bound can read the log before their events are in it.
  std::map<std::string, std::string> Binders(const std::vector<std::string>& pods) const {
    std::map<std::string, std::string> users;
    WaitFor(
        [&] {
          users = BindingUsers(shared().audit_log, ns_);
          return std::all_of(pods.begin(), pods.end(),
                             [&](const std::string& pod) { return users.count(pod) > 0; });
        },
        std::chrono::seconds(10));
    return users;
  }

  // One line in the test's output: what the scheduler said, for whoever
  // reads a CI log.
  static void Note(const std::string& what) { std::cout << "[e2e] " << what << "\n"; }

  static void ExpectNothingOverAllocated() {
    const std::vector<std::string> over = OverAllocatedNodes(cp());
    EXPECT_TRUE(over.empty()) << ::testing::PrintToString(over);
  }

  std::string ns_;
  std::vector<std::string> nodes_;
};

}  // namespace schedext::testing::e2e

#endif  // SCHEDEXT_TEST_CONTROL_PLANE_E2E_SUITE_H_
