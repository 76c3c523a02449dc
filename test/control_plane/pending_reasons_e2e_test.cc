// End to end, "why is my pod pending?" as a user reads it: the
// FailedScheduling event the real kube-scheduler writes from schedext's
// FailedNodes. kube-scheduler counts nodes per distinct reason text ("0/N
// nodes are available: <count> <reason>, ..."), so a reason that carried a
// per-node amount would split the count into one entry per amount and make
// the message as long as the node list.
//
// The real kube-scheduler with the shipped GPU-sharing configuration
// (deploy/scheduler/kube-scheduler-config-gpushare.yaml, node-cache mode) and
// the real schedext (deploy/gpushare/schedext.yaml) against the real
// kube-apiserver. 120 nodes of two 8 GiB GPUs each; pods bound at creation
// (annotated with their device, as schedext's bind would) take 1 to 4 GiB of
// device 0 and 4 GiB of device 1, so the largest free amount on one GPU is
// 7, 6, 5 or 4 GiB depending on the node, and every node has at least 8 GiB
// free in total (kube-scheduler's own fit passes). A pod asking for 8 GiB
// fits on no single GPU anywhere: schedext rejects all 120 nodes, for four
// different shortfalls, with one reason. GET /explain/pod/<ns>/<pod> on
// schedext then gives each node's shortfall from the live cache.
#include <sys/wait.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
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
constexpr int kNodes = 120;
constexpr std::string_view kReason = "Insufficient aliyun.com/gpu-mem on any one GPU";

// Runs the schedext binary with `args`: its exit code (-1 when it did not
// exit), stdout and stderr in `out`.
int RunSchedext(const std::string& args, std::string& out) {
  const std::string command = std::string(SCHEDEXT_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  out.clear();
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class PendingReasonsE2eTest : public E2eSuite {
 protected:
  static void SetUpTestSuite() {
    StartE2e({}, [] { return ReadSourceFile("deploy/gpushare/schedext.yaml"); });
  }

  void SetUp() override {
    E2eSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (cp().scheduler().pid <= 0) {
      ASSERT_NO_FATAL_FAILURE(StartScheduler(kGpuShareConfig, {}, "/gpushare"));
    }
  }


  // GPU memory schedext's cache counts as used on each node of this test
  // (GET /gpushare/inspect); empty when it cannot say.
  std::map<std::string, int> UsedPerNode() const {
    const auto [status, body] = HttpGet(schedext().port(), "/gpushare/inspect");
    std::map<std::string, int> used;
    const json doc = json::parse(body, nullptr, false);
    if (status != 200 || !doc.is_object() || !doc["nodes"].is_array()) return used;
    for (const json& n : doc["nodes"]) {
      const std::string name = n.value("name", "");
      if (name.rfind(ns_ + "-", 0) == 0) used[name] = n.value("usedMemory", -1);
    }
    return used;
  }
};

TEST_F(PendingReasonsE2eTest, RejectionOnEveryNodeIsOneCountedReason) {
  std::map<std::string, int> want_used;
  for (int i = 0; i < kNodes; ++i) {
    const std::string suffix = "g" + std::to_string(i);
    ASSERT_NO_FATAL_FAILURE(AddNode(suffix, {{"cpu", "8"},
                                             {"memory", "32Gi"},
                                             {std::string(kGpuMem), "16"},
                                             {"aliyun.com/gpu-count", "2"}}));
    const int taken = 1 + i % 4;  // device 0: 7, 6, 5 or 4 GiB free
    ASSERT_NO_FATAL_FAILURE(CreateBoundGpuPod("d0-" + suffix, Node(suffix), 0, taken));
    ASSERT_NO_FATAL_FAILURE(CreateBoundGpuPod("d1-" + suffix, Node(suffix), 1, 4));
    want_used[Node(suffix)] = taken + 4;
  }
  // Filter answers from schedext's cache: the pod goes in once the cache
  // counts every bound pod (else a node would pass and the pod be bound).
  std::map<std::string, int> used;
  ASSERT_TRUE(WaitFor(
      [&] {
        used = UsedPerNode();
        return used == want_used;
      },
      kScheduleTimeout))
      << ::testing::PrintToString(used);

  PodSpec big = Pod("big", {{"cpu", "100m"}});
  big.limits = {{std::string(kGpuMem), "8"}};
  ASSERT_NO_FATAL_FAILURE(Create(big));

  // kube-scheduler stops looking once it has 100 feasible nodes of its own
  // (numFeasibleNodesToFind: at least 100, else percentageOfNodesToScore),
  // so schedext sees, and the event counts, 100 to 120 of them. It may also
  // first see fewer nodes than the test made; it retries on node events, so
  // wait for an event over all of them.
  const std::regex counted_once("0/" + std::to_string(kNodes) +
                                " nodes are available: ([0-9]+) " +
                                std::regex_replace(std::string(kReason), std::regex("[.]"), "\\.") +
                                "\\. preemption: .*");
  std::vector<std::string> events;
  std::string matched;
  const bool counted = WaitFor(
      [&] {
        events = FailedSchedulingEvents(cp(), ns_, "big");
        for (const std::string& e : events) {
          std::smatch m;
          if (std::regex_match(e, m, counted_once) && std::stoi(m[1].str()) >= 100) {
            matched = e;
            return true;
          }
        }
        return false;
      },
      kScheduleTimeout);
  ASSERT_TRUE(counted) << "want \"0/" << kNodes << " nodes are available: <100 or more> "
                       << kReason << ". preemption: ...\" (one reason, counted), got "
                       << ::testing::PrintToString(events);
  Note("FailedScheduling: " + matched);
  // Nothing per node: no node name, and short whatever the node count.
  EXPECT_EQ(matched.find(ns_ + "-g"), std::string::npos) << matched;
  // What precedes "preemption:" is the schedext part; kube-scheduler 1.37
  // words its own preemption part at more length than 1.26 does.
  EXPECT_LT(matched.find(" preemption: "), 120u) << matched;
  // The pod's PodScheduled condition (kubectl describe) says the same.
  const auto condition = WaitUnschedulable(cp(), ns_, "big", kScheduleTimeout);
  ASSERT_TRUE(condition.has_value());
  EXPECT_TRUE(std::regex_match(*condition, counted_once)) << *condition;
  EXPECT_EQ(GetPod(cp(), ns_, "big")["spec"].value("nodeName", ""), "");

  // What the event leaves out, per node, from schedext's live cache with no
  // request body: GET /explain/pod/<ns>/big/gpushare (the profile the
  // scheduler's urlPrefix names; the default one has no GpuShare).
  const auto [status, body] =
      HttpGet(schedext().port(), "/explain/pod/" + ns_ + "/big/gpushare");
  ASSERT_EQ(status, 200) << body;
  const json doc = json::parse(body, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << body;
  EXPECT_EQ(doc["nodeMode"], "cache");
  EXPECT_EQ(doc["pod"]["name"], "big");
  EXPECT_EQ(doc["ranking"], json::array());
  std::map<std::string, std::string> details;
  for (const json& n : doc["nodes"]) {
    const std::string name = n.value("name", "");
    if (name.rfind(ns_ + "-g", 0) != 0) continue;
    EXPECT_EQ(n["verdict"], "unschedulable") << n.dump();
    EXPECT_EQ(n["rejectedBy"], "GpuShare") << n.dump();
    EXPECT_EQ(n["reason"], kReason) << n.dump();
    details[name] = n["detail"].is_string() ? n["detail"].get<std::string>() : "(null)";
  }
  std::map<std::string, std::string> want_details;
  for (int i = 0; i < kNodes; ++i) {
    const int taken = 1 + i % 4;  // device 0's free 8 - taken is the largest
    want_details[Node("g" + std::to_string(i))] =
        "needs 8 GiB on one GPU; largest free " + std::to_string(8 - taken) + " GiB, short by " +
        std::to_string(taken) + " GiB";
  }
  EXPECT_EQ(details, want_details);

  // `schedext why` asks the same endpoint: the document as JSON, and the
  // table with each rejected node's reason and detail.
  std::string out;
  const std::string why = "why --server " + schedext().url() + " --profile gpushare " + ns_ + "/big";
  ASSERT_EQ(RunSchedext(why + " --output json", out), 0) << out;
  json why_doc = json::parse(out, nullptr, false);
  ASSERT_TRUE(why_doc.is_object()) << out;
  EXPECT_EQ(why_doc["nodes"], doc["nodes"]);
  ASSERT_EQ(RunSchedext(why, out), 0) << out;
  EXPECT_EQ(out.rfind("profile gpushare, pod " + ns_ + "/big: ", 0), 0u) << out;
  EXPECT_NE(out.find("\n  " + Node("g0") + ": GpuShare: " + std::string(kReason) +
                     " (needs 8 GiB on one GPU; largest free 7 GiB, short by 1 GiB)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("ranking: (no node passes)\n"), std::string::npos) << out;
  const size_t rejected = out.find("rejected:\n");
  Note("schedext why (excerpt):\n" + out.substr(0, 400) + "\n...\n" +
       (rejected == std::string::npos ? "" : out.substr(rejected, 500)));
  EXPECT_EQ(RunSchedext("why --server " + schedext().url() + " " + ns_ + "/nope", out), 1) << out;
}

}  // namespace
}  // namespace schedext::testing::e2e
