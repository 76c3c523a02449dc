// ControlPlaneSuite: the gtest base of the control-plane tests. A suite
// derives from it and starts ONE control plane for all its tests in
// SetUpTestSuite (starting etcd + kube-apiserver costs ~5 s of 2 cores):
//
//   class InformerTest : public ControlPlaneSuite {
//    protected:
//     static void SetUpTestSuite() { StartSharedControlPlane(); }  // or with options
//   };
//   TEST_F(InformerTest, Syncs) { auto client = NewClient(cp().schedext_kubeconfig()); ... }
//
// TearDownTestSuite (inherited) stops it. Without the binaries every test of
// the suite is skipped with a message saying how to get them — or fails when
// $CI is "true" (ControlPlaneRequired()). A control plane that failed to
// start fails every test with its error (and the log tail).
//
// ctest runs each suite as its own test process (test/CMakeLists.txt), so
// suites run in parallel under `ctest -j` and each pays for one control plane.
// A test that must kill or reconfigure the API server belongs in a suite of
// its own.
#ifndef SCHEDEXT_TEST_CONTROL_PLANE_CONTROL_PLANE_SUITE_H_
#define SCHEDEXT_TEST_CONTROL_PLANE_CONTROL_PLANE_SUITE_H_

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "schedext/cluster/client_config.h"
#include "schedext/cluster/http_kube_client.h"
#include "schedext/cluster/kube_client.h"
#include "schedext/status.h"
#include "testing/control_plane.h"

namespace schedext::testing {

class ControlPlaneSuite : public ::testing::Test {
 protected:
  // Finds the binaries and starts the shared control plane (call from the
  // derived suite's SetUpTestSuite).
  static void StartSharedControlPlane(ControlPlaneOptions options = {}) {
    // As schedext's main does: a peer that closed its end of a TLS
    // connection must not kill the process on the next write.
    ::signal(SIGPIPE, SIG_IGN);
    State& s = state();
    s = State{};
    StatusOr<ControlPlaneBinaries> binaries = FindControlPlaneBinaries();
    if (!binaries.ok()) {
      s.missing = binaries.status().message();
      return;
    }
    s.cp = std::make_unique<ControlPlane>(*binaries, std::move(options));
    s.start = s.cp->Start();
    if (!s.start.ok()) s.cp->Stop();
  }

  static void TearDownTestSuite() {
    State& s = state();
    if (s.cp) s.cp->Stop();
    s.cp.reset();
  }

  void SetUp() override {
    const State& s = state();
    if (!s.missing.empty()) {
      if (ControlPlaneRequired()) {
        FAIL() << "CI=true and " << s.missing;
      }
      GTEST_SKIP() << s.missing;
    }
    ASSERT_TRUE(s.cp != nullptr) << "StartSharedControlPlane() was not called";
    ASSERT_TRUE(s.start.ok()) << "control plane did not start: " << s.start.ToString();
  }

  static ControlPlane& cp() { return *state().cp; }
  // False when no control plane was made (binaries missing): cp() is then
  // not to be called, e.g. from a TearDown after SetUp's failure.
  static bool has_cp() { return state().cp != nullptr; }

  // A ClientConfig from `kubeconfig` with schedext's defaults (rate limit off
  // unless `qps` > 0: tests make bursts of setup calls).
  static cluster::ClientConfig ConfigFor(const std::string& kubeconfig, double qps = 0) {
    StatusOr<cluster::ClientConfig> config = cluster::LoadKubeconfig(kubeconfig);
    EXPECT_TRUE(config.ok()) << config.status().ToString();
    if (!config.ok()) return cluster::ClientConfig{};
    cluster::ClientConfig c = *config;
    c.qps = qps;
    return c;
  }

  // schedext's HttpKubeClient for `kubeconfig`; null (with a test failure)
  // when it cannot be built.
  static std::unique_ptr<cluster::KubeClient> NewClient(const std::string& kubeconfig,
                                                        double qps = 0) {
    StatusOr<std::unique_ptr<cluster::KubeClient>> client =
        cluster::NewHttpKubeClient(ConfigFor(kubeconfig, qps));
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(client).value() : nullptr;
  }

  // Polls `condition` every 50 ms until it holds or `timeout` passes.
  static bool WaitFor(const std::function<bool()>& condition,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
  }

 private:
  struct State {
    std::unique_ptr<ControlPlane> cp;
    Status start;
    std::string missing;  // why the binaries were not found
  };
  // One per test process: suites run one after another, each starting and
  // stopping its own control plane.
  static State& state() {
    static State s;
    return s;
  }
};

}  // namespace schedext::testing

#endif  // SCHEDEXT_TEST_CONTROL_PLANE_CONTROL_PLANE_SUITE_H_
