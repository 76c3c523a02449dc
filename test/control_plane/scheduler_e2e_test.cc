// End to end: the real kube-scheduler v1.26 schedules pods through the real
// schedext binary, against the real kube-apiserver. The scheduler
// configurations are deploy/scheduler's shipped files (urlPrefix, leader
// election and kubeconfig replaced; bindVerb and nodeCacheCapable toggled
// where a test says so); schedext runs deploy/base/schedext.yaml plus a
// NodeLabel policy forbidding nodes labelled example.com/maintenance, as its
// own ServiceAccount with exactly deploy/'s RBAC.
//
// Every test asserts where each pod landed (spec.nodeName from the API
// server), that no node is over-allocated, and who created each Binding
// (kube-apiserver's audit log: schedext's ServiceAccount with bindVerb, the
// scheduler without).
#include "control_plane/scheduler_e2e.h"

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "control_plane/e2e_suite.h"

namespace schedext::testing::e2e {
namespace {

using nlohmann::json;

constexpr std::string_view kNodeCacheConfig =
    "deploy/scheduler/kube-scheduler-config-nodecache.yaml";
constexpr std::string_view kFullNodesConfig =
    "deploy/scheduler/kube-scheduler-config-fullnodes.yaml";
constexpr std::string_view kMaintenanceLabel = "example.com/maintenance";

// The platform rule under test: nodes in maintenance are never used.
constexpr std::string_view kNodeLabelPolicy =
    "name: NodeLabel\n"
    "args:\n"
    "  forbidden:\n"
    "    - matchExpressions:\n"
    "        - {key: example.com/maintenance, operator: Exists}\n";

class SchedulerE2eTest : public E2eSuite {
 protected:
  static void SetUpTestSuite() {
    StartE2e(
        {},
        []() -> StatusOr<std::string> {
          SCHEDEXT_ASSIGN_OR_RETURN(std::string base, ReadSourceFile("deploy/base/schedext.yaml"));
          return WithPolicy(base, "default", kNodeLabelPolicy);
        },
        [] {
          SCHEDEXT_RETURN_IF_ERROR(EnsurePriorityClass(cp(), "e2e-low", 100));
          return EnsurePriorityClass(cp(), "e2e-high", 1000);
        });
  }

  // Ten 500m pods on two 2-cpu nodes and three empty 8-cpu nodes (one in
  // maintenance, one tainted, one not ready): eight land, four per allowed
  // node, none elsewhere (in-tree scoring alone would prefer the empty
  // untainted ones), two stay Pending for cpu. Every Binding is made by
  // schedext's ServiceAccount exactly when `schedext_binds`.
  void PlacesPodsAwayFromForbiddenNodes(std::string_view deploy_file, SchedulerEdits edits,
                                        bool schedext_binds) {
    ASSERT_NO_FATAL_FAILURE(StartScheduler(deploy_file, edits));
    ASSERT_NO_FATAL_FAILURE(AddNode("a", {{"cpu", "2"}, {"memory", "4Gi"}}));
    ASSERT_NO_FATAL_FAILURE(AddNode("b", {{"cpu", "2"}, {"memory", "4Gi"}}));
    ASSERT_NO_FATAL_FAILURE(AddNode("x", {{"cpu", "8"}, {"memory", "16Gi"}},
                                    {{std::string(kMaintenanceLabel), "true"}}));
    // Refused by both kube-scheduler and schedext's TaintToleration.
    ASSERT_NO_FATAL_FAILURE(AddNode("t", {{"cpu", "8"}, {"memory", "16Gi"}}, {},
                                    {{"example.com/dedicated", "db", "NoSchedule"}}));
    // Ready=False without the not-ready taint (no node-lifecycle controller):
    // kube-scheduler 1.26 filters on taints only; schedext's NodeHealth
    // refuses it.
    ASSERT_NO_FATAL_FAILURE(AddNode("nr", {{"cpu", "8"}, {"memory", "16Gi"}}, {}, {}, "False"));
    const int64_t filters_before = RequestCount(schedext().port(), "default", "filter");
    const int64_t binds_before = RequestCount(schedext().port(), "default", "bind");
    ASSERT_GE(filters_before, 0);
    ASSERT_GE(binds_before, 0);

    std::vector<std::string> names;
    for (int i = 0; i < 10; ++i) {
      names.push_back("p" + std::to_string(i));
      ASSERT_NO_FATAL_FAILURE(Create(Pod(names.back(), {{"cpu", "500m"}, {"memory", "64Mi"}})));
    }
    // Settled: every pod bound or given up on for now.
    std::map<std::string, std::string> bound;
    std::map<std::string, std::string> unschedulable;
    ASSERT_TRUE(WaitFor(
        [&] {
          bound.clear();
          unschedulable.clear();
          for (const json& pod : ListPods(cp(), ns_)) {
            const std::string name = pod["metadata"]["name"];
            const std::string node = pod["spec"].value("nodeName", "");
            if (!node.empty()) {
              bound[name] = node;
              continue;
            }
            for (const json& c : pod["status"].value("conditions", json::array())) {
              if (c.value("type", "") == "PodScheduled" &&
                  c.value("reason", "") == "Unschedulable") {
                unschedulable[name] = c.value("message", "");
              }
            }
          }
          return bound.size() + unschedulable.size() == names.size();
        },
        kScheduleTimeout))
        << "bound " << ::testing::PrintToString(bound) << " unschedulable "
        << ::testing::PrintToString(unschedulable);

    std::map<std::string, int> per_node;
    for (const auto& [pod, node] : bound) ++per_node[node];
    EXPECT_EQ(per_node, (std::map<std::string, int>{{Node("a"), 4}, {Node("b"), 4}}))
        << ::testing::PrintToString(bound);
    EXPECT_EQ(per_node.count(Node("x")), 0u) << "a pod landed on the node in maintenance";
    ASSERT_EQ(unschedulable.size(), 2u);
    Note("pending: " + unschedulable.begin()->second);
    for (const auto& [pod, message] : unschedulable) {
      // x and nr passed kube-scheduler's own filters; schedext refused them.
      EXPECT_NE(message.find("1 node(s) had forbidden labels"), std::string::npos) << message;
      EXPECT_NE(message.find("1 node(s) were not ready"), std::string::npos) << message;
      EXPECT_NE(message.find("1 node(s) had untolerated taint"), std::string::npos) << message;
      EXPECT_NE(message.find("2 Insufficient cpu"), std::string::npos) << message;
    }
    ExpectNothingOverAllocated();

    // Who bound: schedext's ServiceAccount exactly when bindVerb is set.
    std::vector<std::string> bound_pods;
    for (const auto& [pod, node] : bound) bound_pods.push_back(pod);
    const std::map<std::string, std::string> binders = Binders(bound_pods);
    const std::string want = schedext_binds ? cp().schedext_user() : "system:kube-scheduler";
    for (const auto& [pod, node] : bound) {
      ASSERT_EQ(binders.count(pod), 1u) << pod << " has no Binding in the audit log";
      EXPECT_EQ(binders.at(pod), want) << pod;
    }
    EXPECT_EQ(binders.size(), bound.size()) << ::testing::PrintToString(binders);
    EXPECT_GT(RequestCount(schedext().port(), "default", "filter"), filters_before);
    const int64_t binds = RequestCount(schedext().port(), "default", "bind") - binds_before;
    EXPECT_EQ(binds, schedext_binds ? 8 : 0);
  }

  // A high-priority pod preempts a low-priority one on a full node. Two
  // candidates are full of one low-priority victim each; the in-tree
  // preemption ties between them, but the second node is in maintenance, so
  // schedext's filter and preempt leave only the first.
  void PreemptsOnlyWhereSchedextAllows(std::string_view deploy_file, SchedulerEdits edits) {
    ASSERT_NO_FATAL_FAILURE(StartScheduler(deploy_file, edits));
    ASSERT_NO_FATAL_FAILURE(AddNode("a", {{"cpu", "1"}, {"memory", "4Gi"}}));
    ASSERT_NO_FATAL_FAILURE(AddNode("x", {{"cpu", "1"}, {"memory", "4Gi"}},
                                    {{std::string(kMaintenanceLabel), "true"}}));
    // On the node in maintenance: bound directly, as a pod of another
    // scheduler (or one from before the maintenance) would be.
    PodSpec on_x = Pod("low-x", {{"cpu", "800m"}});
    on_x.priority_class = "e2e-low";
    on_x.node_name = Node("x");
    ASSERT_NO_FATAL_FAILURE(Create(on_x));
    PodSpec low = Pod("low-a", {{"cpu", "800m"}});
    low.priority_class = "e2e-low";
    ASSERT_NO_FATAL_FAILURE(Create(low));
    auto bound = WaitForNodeNames(cp(), ns_, {"low-a"}, kScheduleTimeout);
    ASSERT_EQ(bound["low-a"], Node("a"));
    const std::string low_uid = GetPod(cp(), ns_, "low-a")["metadata"].value("uid", "");

    const int64_t preempts_before = RequestCount(schedext().port(), "default", "preempt");
    ASSERT_GE(preempts_before, 0);
    PodSpec high = Pod("high", {{"cpu", "800m"}});
    high.priority_class = "e2e-high";
    ASSERT_NO_FATAL_FAILURE(Create(high));
    bound = WaitForNodeNames(cp(), ns_, {"high"}, kScheduleTimeout);
    ASSERT_EQ(bound["high"], Node("a")) << "the preemptor did not land on the allowed node";

    // The victim is gone (or at least being deleted: a re-created pod of
    // the same name would have another uid).
    const json victim = GetPod(cp(), ns_, "low-a");
    EXPECT_TRUE(victim.is_null() || victim["metadata"].value("uid", "") != low_uid ||
                victim["metadata"].contains("deletionTimestamp"))
        << victim.dump();
    // The pod on the node in maintenance was not touched.
    const json kept = GetPod(cp(), ns_, "low-x");
    ASSERT_TRUE(kept.is_object());
    EXPECT_FALSE(kept["metadata"].contains("deletionTimestamp")) << kept.dump();
    EXPECT_EQ(kept["spec"].value("nodeName", ""), Node("x"));
    EXPECT_GT(RequestCount(schedext().port(), "default", "preempt"), preempts_before)
        << "kube-scheduler preempted without asking schedext";
    ExpectNothingOverAllocated();
  }
};

TEST_F(SchedulerE2eTest, NodeCacheModeSchedextBinds) {
  PlacesPodsAwayFromForbiddenNodes(kNodeCacheConfig, {}, /*schedext_binds=*/true);
}

TEST_F(SchedulerE2eTest, NodeCacheModeSchedulerBinds) {
  SchedulerEdits edits;
  edits.bind = false;
  PlacesPodsAwayFromForbiddenNodes(kNodeCacheConfig, edits, /*schedext_binds=*/false);
}

TEST_F(SchedulerE2eTest, FullNodeModeSchedulerBinds) {
  PlacesPodsAwayFromForbiddenNodes(kFullNodesConfig, {}, /*schedext_binds=*/false);
}

TEST_F(SchedulerE2eTest, FullNodeModeSchedextBinds) {
  SchedulerEdits edits;
  edits.bind = true;
  PlacesPodsAwayFromForbiddenNodes(kFullNodesConfig, edits, /*schedext_binds=*/true);
}

// The counterfactual of the tests above: kube-scheduler alone puts a pod on
// the node in maintenance; through schedext the same pod stays Pending.
TEST_F(SchedulerE2eTest, WithoutSchedextTheForbiddenNodeWouldBeUsed) {
  SchedulerEdits alone;
  alone.drop_extenders = true;
  ASSERT_NO_FATAL_FAILURE(StartScheduler(kNodeCacheConfig, alone));
  ASSERT_NO_FATAL_FAILURE(
      AddNode("x", {{"cpu", "4"}, {"memory", "4Gi"}}, {{std::string(kMaintenanceLabel), "true"}}));
  PodSpec pinned = Pod("alone", {{"cpu", "100m"}});
  pinned.node_selector[std::string(kNodeLabel)] = Node("x");
  ASSERT_NO_FATAL_FAILURE(Create(pinned));
  EXPECT_EQ(WaitForNodeNames(cp(), ns_, {"alone"}, kScheduleTimeout)["alone"], Node("x"));

  ASSERT_NO_FATAL_FAILURE(StartScheduler(kNodeCacheConfig, {}));
  pinned.name = "through-schedext";
  ASSERT_NO_FATAL_FAILURE(Create(pinned));
  const auto message = WaitUnschedulable(cp(), ns_, pinned.name, kScheduleTimeout);
  ASSERT_TRUE(message.has_value()) << GetPod(cp(), ns_, pinned.name).dump();
  Note("pinned to the node in maintenance: " + *message);
  EXPECT_NE(message->find("1 node(s) had forbidden labels"), std::string::npos) << *message;
  EXPECT_EQ(GetPod(cp(), ns_, pinned.name)["spec"].value("nodeName", ""), "");
  bool event = false;
  ASSERT_TRUE(WaitFor([&] {
    for (const std::string& m : FailedSchedulingEvents(cp(), ns_, pinned.name)) {
      event = event || m.find("forbidden labels") != std::string::npos;
    }
    return event;
  })) << "no FailedScheduling event naming schedext's reason";
}

// A resource kube-scheduler is told to ignore (managedResources,
// ignoredByScheduler: true) is counted by schedext's NodeResourcesFit alone,
// from its own cache of the pods bound to each node: a node without it, and a
// node whose two units are taken, are refused; freeing a unit lets the
// waiting pod in.
TEST_F(SchedulerE2eTest, ResourceOnlySchedextCounts) {
  SchedulerEdits edits;
  edits.managed_resources = {{{"example.com/widget", true}}};
  ASSERT_NO_FATAL_FAILURE(StartScheduler(kNodeCacheConfig, edits));
  ASSERT_NO_FATAL_FAILURE(
      AddNode("w", {{"cpu", "4"}, {"memory", "4Gi"}, {"example.com/widget", "2"}}));
  // Emptier and bigger: in-tree scoring prefers it, and in-tree fit no
  // longer checks widgets.
  ASSERT_NO_FATAL_FAILURE(AddNode("none", {{"cpu", "32"}, {"memory", "64Gi"}}));
  const int64_t filters_before = RequestCount(schedext().port(), "default", "filter");

  auto widget_pod = [&](const std::string& name) {
    PodSpec p = Pod(name, {{"cpu", "100m"}, {"example.com/widget", "1"}});
    p.limits = {{"example.com/widget", "1"}};
    return p;
  };
  ASSERT_NO_FATAL_FAILURE(Create(widget_pod("w1")));
  ASSERT_NO_FATAL_FAILURE(Create(widget_pod("w2")));
  auto bound = WaitForNodeNames(cp(), ns_, {"w1", "w2"}, kScheduleTimeout);
  EXPECT_EQ(bound["w1"], Node("w"));
  EXPECT_EQ(bound["w2"], Node("w"));

  ASSERT_NO_FATAL_FAILURE(Create(widget_pod("w3")));
  const auto message = WaitUnschedulable(cp(), ns_, "w3", kScheduleTimeout);
  ASSERT_TRUE(message.has_value()) << GetPod(cp(), ns_, "w3").dump();
  Note("third widget pod: " + *message);
  EXPECT_NE(message->find("2 Insufficient example.com/widget"), std::string::npos) << *message;
  EXPECT_GT(RequestCount(schedext().port(), "default", "filter"), filters_before);
  ExpectNothingOverAllocated();

  // A unit is freed: the pod waiting for one gets it (the delete requeues it).
  ASSERT_TRUE(cp().Delete("/api/v1/namespaces/" + ns_ + "/pods/w1").ok());
  bound = WaitForNodeNames(cp(), ns_, {"w3"}, kScheduleTimeout);
  EXPECT_EQ(bound["w3"], Node("w"));
  ExpectNothingOverAllocated();
}

// A pod only schedext refused is retried when the node it refused changes:
// the node leaves maintenance and the pod lands within seconds, not at
// kube-scheduler's 5-minute flush of unschedulable pods (the node update
// requeues it on both minors, queueing hints or not).
TEST_F(SchedulerE2eTest, ARefusedPodIsPlacedWhenItsNodeLeavesMaintenance) {
  ASSERT_NO_FATAL_FAILURE(StartScheduler(kNodeCacheConfig, {}));
  ASSERT_NO_FATAL_FAILURE(
      AddNode("x", {{"cpu", "4"}, {"memory", "4Gi"}}, {{std::string(kMaintenanceLabel), "true"}}));
  ASSERT_NO_FATAL_FAILURE(Create(Pod("waits", {{"cpu", "100m"}})));
  const auto message = WaitUnschedulable(cp(), ns_, "waits", kScheduleTimeout);
  ASSERT_TRUE(message.has_value()) << GetPod(cp(), ns_, "waits").dump();
  EXPECT_NE(message->find("1 node(s) had forbidden labels"), std::string::npos) << *message;

  const auto start = std::chrono::steady_clock::now();
  const std::string patch =
      "{\"metadata\":{\"labels\":{\"" + std::string(kMaintenanceLabel) + "\":null}}}";
  auto r = cp().AdminRequest("PATCH", "/api/v1/nodes/" + Node("x"), patch);
  ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
  auto bound = WaitForNodeNames(cp(), ns_, {"waits"}, std::chrono::seconds(30));
  ASSERT_EQ(bound["waits"], Node("x")) << GetPod(cp(), ns_, "waits").dump();
  Note("placed " +
       std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count()) +
       " ms after the node left maintenance");
}

// Pod-level spec.resources (PodLevelResources, on by default from 1.34), with
// kube-scheduler's own NodeResourcesFit off so that schedext's decides: a pod
// whose pod-level cpu request exceeds the node is refused although its
// container's would fit (the filter request), and a pod placed with a
// pod-level request counts that much on its node in schedext's cache (the
// next pod is refused). Older API servers drop the field: the same pods are
// then counted by their containers, which is what their scheduler does.
TEST_F(SchedulerE2eTest, PodLevelRequestsCountWhereTheApiServerKeepsThem) {
  SchedulerEdits edits;
  edits.disable_in_tree_fit = true;
  ASSERT_NO_FATAL_FAILURE(StartScheduler(kNodeCacheConfig, edits));
  ASSERT_NO_FATAL_FAILURE(AddNode("p", {{"cpu", "1"}, {"memory", "4Gi"}}));
  const bool pod_level = KubernetesMinor(cp().scheduler_version()) >= 34;
  Note(pod_level ? "pod-level resources kept by the API server"
                 : "pod-level resources dropped by the API server (before 1.34)");

  // A 100m container in a pod that asks for `pod_cpu` as a whole.
  auto create = [&](const std::string& name, const std::string& pod_cpu) {
    json pod = json::parse(PodJson(Pod(name, {{"cpu", "100m"}})));
    pod["spec"]["resources"] = {{"requests", {{"cpu", pod_cpu}}}};
    auto created = cp().Create("/api/v1/namespaces/" + ns_ + "/pods", pod.dump());
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    EXPECT_EQ(json::parse(*created)["spec"].contains("resources"), pod_level) << *created;
  };
  ASSERT_NO_FATAL_FAILURE(create("too-big", "1500m"));
  if (!pod_level) {
    EXPECT_EQ(WaitForNodeNames(cp(), ns_, {"too-big"}, kScheduleTimeout)["too-big"], Node("p"));
    return;
  }
  auto message = WaitUnschedulable(cp(), ns_, "too-big", kScheduleTimeout);
  ASSERT_TRUE(message.has_value()) << GetPod(cp(), ns_, "too-big").dump();
  Note("1500m pod-level request on a 1-cpu node: " + *message);
  EXPECT_NE(message->find("Insufficient cpu"), std::string::npos) << *message;
  ASSERT_TRUE(cp().Delete("/api/v1/namespaces/" + ns_ + "/pods/too-big").ok());

  ASSERT_NO_FATAL_FAILURE(create("agent", "800m"));
  EXPECT_EQ(WaitForNodeNames(cp(), ns_, {"agent"}, kScheduleTimeout)["agent"], Node("p"));
  ASSERT_NO_FATAL_FAILURE(Create(Pod("next", {{"cpu", "300m"}})));
  message = WaitUnschedulable(cp(), ns_, "next", kScheduleTimeout);
  ASSERT_TRUE(message.has_value()) << GetPod(cp(), ns_, "next").dump();
  Note("300m next to an 800m pod-level pod on a 1-cpu node: " + *message);
  EXPECT_NE(message->find("Insufficient cpu"), std::string::npos) << *message;
}

TEST_F(SchedulerE2eTest, PreemptsInNodeCacheMode) {
  PreemptsOnlyWhereSchedextAllows(kNodeCacheConfig, {});
}

TEST_F(SchedulerE2eTest, PreemptsInFullNodeMode) {
  PreemptsOnlyWhereSchedextAllows(kFullNodesConfig, {});
}

}  // namespace
}  // namespace schedext::testing::e2e
