// End to end, scheduling gates: a pod created with spec.schedulingGates is
// held by kube-scheduler (PreEnqueue) and never sent to schedext; once its
// gates are removed it is filtered by schedext and bound by it like any
// other. The real kube-scheduler with the shipped node-cache configuration,
// the real schedext with deploy/base/schedext.yaml.
//
// Gates are beta (on by default) from 1.27 and GA from 1.30; on 1.26 the
// suite turns the alpha gate PodSchedulingReadiness on in kube-apiserver
// and kube-scheduler, without which the API server drops the field.
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "control_plane/e2e_suite.h"
#include "control_plane/scheduler_e2e.h"

namespace schedext::testing::e2e {
namespace {

using nlohmann::json;

constexpr std::string_view kNodeCacheConfig =
    "deploy/scheduler/kube-scheduler-config-nodecache.yaml";

// The feature-gate flag both components need on this minor ({} when none).
std::vector<std::string> GateFlags() {
  StatusOr<ControlPlaneBinaries> binaries = FindControlPlaneBinaries();
  if (!binaries.ok()) return {};
  StatusOr<std::string> version = BinaryVersion(binaries->kube_apiserver);
  if (!version.ok() || KubernetesMinor(*version) >= 27) return {};
  return {"--feature-gates=PodSchedulingReadiness=true"};
}

class SchedulingGatesE2eTest : public E2eSuite {
 protected:
  static void SetUpTestSuite() {
    ControlPlaneOptions options;
    options.apiserver_flags = GateFlags();
    StartE2e(std::move(options), [] { return ReadSourceFile("deploy/base/schedext.yaml"); });
  }
};

TEST_F(SchedulingGatesE2eTest, AGatedPodReachesSchedextOnlyOnceUngated) {
  ASSERT_NO_FATAL_FAILURE(StartScheduler(kNodeCacheConfig, {}, "", GateFlags()));
  ASSERT_NO_FATAL_FAILURE(AddNode("a", {{"cpu", "2"}, {"memory", "4Gi"}}));
  const int64_t filters_before = RequestCount(schedext().port(), "default", "filter");
  ASSERT_GE(filters_before, 0);

  json gated = json::parse(PodJson(Pod("gated", {{"cpu", "100m"}})));
  gated["spec"]["schedulingGates"] = {{{"name", "example.com/quota"}}};
  auto created = cp().Create("/api/v1/namespaces/" + ns_ + "/pods", gated.dump());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_TRUE(json::parse(*created)["spec"].contains("schedulingGates"))
      << "the API server dropped the gate: " << *created;
  const auto held = WaitNotScheduled(cp(), ns_, "gated", kScheduleTimeout);
  ASSERT_TRUE(held.has_value()) << GetPod(cp(), ns_, "gated").dump();
  EXPECT_EQ(held->first, "SchedulingGated") << held->second;

  // An ungated pod created after it is filtered (one node: one filter) and
  // bound while the gated one waits.
  ASSERT_NO_FATAL_FAILURE(Create(Pod("free", {{"cpu", "100m"}})));
  ASSERT_EQ(WaitForNodeNames(cp(), ns_, {"free"}, kScheduleTimeout).count("free"), 1u);
  EXPECT_EQ(RequestCount(schedext().port(), "default", "filter"), filters_before + 1);
  EXPECT_EQ(GetPod(cp(), ns_, "gated")["spec"].value("nodeName", ""), "");

  auto patched = cp().AdminRequest("PATCH", "/api/v1/namespaces/" + ns_ + "/pods/gated",
                                   R"({"spec":{"schedulingGates":null}})");
  ASSERT_TRUE(patched.ok() && patched->status == 200)
      << (patched.ok() ? patched->body : patched.status().ToString());
  ASSERT_EQ(WaitForNodeNames(cp(), ns_, {"gated"}, kScheduleTimeout).count("gated"), 1u)
      << GetPod(cp(), ns_, "gated").dump();
  EXPECT_EQ(RequestCount(schedext().port(), "default", "filter"), filters_before + 2);
  const std::map<std::string, std::string> binders = Binders({"free", "gated"});
  EXPECT_EQ(binders.at("free"), cp().schedext_user());
  EXPECT_EQ(binders.at("gated"), cp().schedext_user());
}

}  // namespace
}  // namespace schedext::testing::e2e
