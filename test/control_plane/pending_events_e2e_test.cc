// End to end, the SchedextUnschedulable Event: what would make a pending pod
// fit, written by schedext on the pod, deduplicated into one series however
// often kube-scheduler retries it.
//
// The real kube-scheduler with the shipped GPU-sharing configuration
// (node-cache mode) and the real schedext (deploy/gpushare/schedext.yaml,
// cluster.events.updateIntervalSeconds 1 so the series moves within the test)
// against the real kube-apiserver. Three nodes of two 8 GiB GPUs; pods bound
// at creation leave 5, 6 and 4 GiB free on one GPU and 4 GiB on the other. A
// pod asking for 8 GiB fits nowhere: the Event names the nearest node (6 GiB
// free, short by 2 GiB) first. Label changes on the nodes make the scheduler
// retry the pod; the retries count into the series of that one Event.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "control_plane/e2e_suite.h"
#include "control_plane/scheduler_e2e.h"

namespace schedext::testing::e2e {
namespace {

using nlohmann::json;

constexpr std::string_view kGpuShareConfig = "deploy/scheduler/kube-scheduler-config-gpushare.yaml";
constexpr std::string_view kGpuMem = "aliyun.com/gpu-mem";

class PendingEventsE2eTest : public E2eSuite {
 protected:
  static void SetUpTestSuite() {
    StartE2e({}, [] {
      StatusOr<std::string> config = ReadSourceFile("deploy/gpushare/schedext.yaml");
      if (!config.ok()) return config;
      return MergeYaml(*config, "cluster:\n  events:\n    updateIntervalSeconds: 1\n");
    });
  }

  void SetUp() override {
    E2eSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (cp().scheduler().pid <= 0) {
      ASSERT_NO_FATAL_FAILURE(StartScheduler(kGpuShareConfig, {}, "/gpushare"));
    }
  }


  // The SchedextUnschedulable events.k8s.io/v1 Events of this test's namespace.
  std::vector<json> SchedextEvents() const {
    std::vector<json> out;
    auto r = cp().AdminRequest("GET", "/apis/events.k8s.io/v1/namespaces/" + ns_ +
                                          "/events?fieldSelector=reason%3DSchedextUnschedulable");
    if (!r.ok() || r->status != 200) return out;
    const json list = json::parse(r->body, nullptr, false);
    if (!list.is_object()) return out;
    for (const json& e : list.value("items", json::array())) out.push_back(e);
    return out;
  }
};

TEST_F(PendingEventsE2eTest, APodThatFitsNowhereGetsOneEventWhoseSeriesCountsTheRetries) {
  // Largest free on one GPU: g0 5 GiB, g1 6 GiB, g2 4 GiB.
  const std::vector<int> taken = {3, 2, 4};
  for (size_t i = 0; i < taken.size(); ++i) {
    const std::string suffix = "g" + std::to_string(i);
    ASSERT_NO_FATAL_FAILURE(AddNode(suffix, {{"cpu", "8"},
                                             {"memory", "32Gi"},
                                             {std::string(kGpuMem), "16"},
                                             {"aliyun.com/gpu-count", "2"}}));
    ASSERT_NO_FATAL_FAILURE(CreateBoundGpuPod("d0-" + suffix, Node(suffix), 0, taken[i]));
    ASSERT_NO_FATAL_FAILURE(CreateBoundGpuPod("d1-" + suffix, Node(suffix), 1, 4));
  }
  // Schedext's cache must count every bound pod before the big one comes.
  ASSERT_TRUE(WaitFor(
      [&] {
        const auto [status, body] = HttpGet(schedext().port(), "/gpushare/inspect");
        const json doc = json::parse(body, nullptr, false);
        if (status != 200 || !doc.is_object() || !doc["nodes"].is_array()) return false;
        int counted = 0;
        for (const json& n : doc["nodes"]) {
          const std::string name = n.value("name", "");
          for (size_t i = 0; i < taken.size(); ++i) {
            if (name == Node("g" + std::to_string(i)) && n.value("usedMemory", -1) == taken[i] + 4)
              ++counted;
          }
        }
        return counted == static_cast<int>(taken.size());
      },
      kScheduleTimeout));

  PodSpec big = Pod("big", {{"cpu", "100m"}});
  big.limits = {{std::string(kGpuMem), "8"}};
  ASSERT_NO_FATAL_FAILURE(Create(big));
  const std::string uid = GetPod(cp(), ns_, "big")["metadata"].value("uid", "");

  // The scheduler may first see fewer nodes than the test made (it retries
  // on node events): wait for the note over all three.
  std::vector<json> events;
  ASSERT_TRUE(WaitFor(
      [&] {
        events = SchedextEvents();
        for (const json& e : events) {
          if (e.value("note", "").rfind("0/3 nodes fit", 0) == 0) return true;
        }
        return false;
      },
      kScheduleTimeout))
      << ::testing::PrintToString(events);
  const std::string want_note =
      "0/3 nodes fit profile gpushare. Nearest: " + Node("g1") +
      " (GpuShare: needs 8 GiB on one GPU; largest free 6 GiB, short by 2 GiB), " + Node("g0") +
      " (GpuShare: needs 8 GiB on one GPU; largest free 5 GiB, short by 3 GiB), " + Node("g2") +
      " (GpuShare: needs 8 GiB on one GPU; largest free 4 GiB, short by 4 GiB).";
  json event;
  for (const json& e : events) {
    if (e.value("note", "") == want_note) event = e;
  }
  ASSERT_TRUE(event.is_object()) << "want note \"" << want_note << "\", got "
                                 << ::testing::PrintToString(events);
  Note("SchedextUnschedulable: " + want_note);
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["reason"], "SchedextUnschedulable");
  EXPECT_EQ(event["action"], "Scheduling");
  EXPECT_EQ(event["reportingController"], "schedext");
  EXPECT_FALSE(event.value("reportingInstance", "").empty());
  EXPECT_EQ(event["regarding"]["kind"], "Pod");
  EXPECT_EQ(event["regarding"]["namespace"], ns_);
  EXPECT_EQ(event["regarding"]["name"], "big");
  EXPECT_EQ(event["regarding"]["uid"], uid);

  // Retries: every node change moves the pod back to the active queue.
  const std::string name = event["metadata"]["name"];
  int64_t count = 0;
  int touches = 0;
  const bool counted = WaitFor(
      [&] {
        const std::string label = "{\"metadata\":{\"labels\":{\"e2e.schedext.io/touch\":\"" +
                                  std::to_string(++touches) + "\"}}}";
        (void)cp().AdminRequest("PATCH", "/api/v1/nodes/" + Node("g" + std::to_string(touches % 3)),
                                label);
        events = SchedextEvents();
        for (const json& e : events) {
          if (e["metadata"]["name"] == name && e.contains("series")) {
            count = e["series"].value("count", 0);
          }
        }
        return count >= 3;
      },
      kScheduleTimeout);
  EXPECT_TRUE(counted) << "series.count " << count << " after " << touches << " node updates; "
                       << ::testing::PrintToString(events);
  // One Event per pod and note: the retries went into its series.
  size_t with_note = 0;
  for (const json& e : events) with_note += e.value("note", "") == want_note ? 1 : 0;
  EXPECT_EQ(with_note, 1u) << ::testing::PrintToString(events);
  Note("series.count " + std::to_string(count) + " after " + std::to_string(touches) +
       " node updates");
  EXPECT_EQ(GetPod(cp(), ns_, "big")["spec"].value("nodeName", ""), "");

  // The counters on /metrics: created and updated, nothing dropped.
  const auto [status, metrics] = HttpGet(schedext().status_port(), "/metrics");
  ASSERT_EQ(status, 200);
  EXPECT_NE(metrics.find("schedext_events_dropped_total{reason=\"queue_full\"} 0"),
            std::string::npos);
  EXPECT_NE(metrics.find("schedext_events_written_total{op=\"create\"}"), std::string::npos);

  // What a user runs (the docs quote it).
  auto described = cp().Kubectl({"get", "events", "-n", ns_, "--field-selector",
                                 "reason=SchedextUnschedulable"});
  if (described.ok()) Note("kubectl get events:\n" + described->output);
  auto pod = cp().Kubectl({"describe", "pod", "-n", ns_, "big"});
  if (pod.ok()) Note("kubectl describe pod:\n" + pod->output);
}

}  // namespace
}  // namespace schedext::testing::e2e
