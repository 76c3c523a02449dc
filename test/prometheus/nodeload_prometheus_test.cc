// NodeLoad against a real Prometheus: the test serves node_exporter-style
// series for three fake nodes on loopback, a real prometheus (testing/
// prometheus.h) scrapes them every second, and the NodeLoad policy built by
// its factory polls Prometheus in the background. Loads change → scores
// follow; Prometheus stopped (by PID) → neutral scores, no filtering, no
// errors.
//
// Every wait is on a condition with a generous bound (a slow, loaded machine
// only makes it take longer). Skipped when prometheus is missing, except under
// CI=true, where that fails.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policy/builtin/nodeload/nodeload.h"
#include "schedext/policy/policy.h"
#include "testing/eventually.h"
#include "testing/fake_node_exporter.h"
#include "testing/prometheus.h"

namespace schedext {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr int64_t kGiB = int64_t{1} << 30;

using testing::Eventually;

class NodeLoadPrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::FindPrometheusBinary().has_value()) {
      if (testing::PrometheusRequired()) {
        FAIL() << "prometheus not found and CI=true (apt-get install prometheus)";
      }
      GTEST_SKIP() << "prometheus not found (apt-get install prometheus); skipping";
    }
    // a: 10 % CPU, 50 % memory; b: 70 %, 25 %; c is exported under no job (no data).
    exporter_.Set("node-a", 0.10, 0.50);
    exporter_.Set("node-b", 0.70, 0.25);
    testing::PrometheusOptions options;
    for (const char* node : {"node-a", "node-b"}) {
      options.targets.push_back({node, "127.0.0.1:" + std::to_string(exporter_.port()),
                                 std::string("/metrics/") + node,
                                 {{"instance", std::string(node) + ":9100"}}});
    }
    StatusOr<std::unique_ptr<testing::PrometheusServer>> started =
        testing::PrometheusServer::Start(options);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    prometheus_ = std::move(started).value();
  }

  std::unique_ptr<policy::Policy> MakePolicy(json args) {
    args["prometheus"]["url"] = prometheus_->url();
    policy::PolicyContext context;
    context.args_path = "profiles[0].policies[0].args";
    StatusOr<std::unique_ptr<policy::Policy>> made = policy::NewNodeLoad(args, context);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    return made.ok() ? std::move(made).value() : nullptr;
  }

  static model::NodeInfo Node(std::string_view name) {
    model::NodeInfo node;
    node.name = name;
    node.capacity.milli_cpu = 1000;
    node.capacity.memory = kGiB;
    node.allocatable.milli_cpu = 1000;
    node.allocatable.memory = kGiB;
    return node;
  }

  // Scores of node-a, node-b, node-c for an empty pod, as the profile runs the
  // hooks; a failing PreScore (an error to kube-scheduler) fails the test.
  std::vector<int64_t> Scores(const policy::Policy& p) {
    const policy::ScoreHook* scorer = p.AsScorer();
    const model::NodeInfo a = Node("node-a"), b = Node("node-b"), c = Node("node-c");
    const std::vector<const model::NodeInfo*> nodes = {&a, &b, &c};
    model::PodInfo pod;
    pod.name = "p";
    policy::RequestState state;
    Status pre = scorer->PreScore(state, pod, nodes);
    EXPECT_TRUE(pre.ok()) << pre.ToString();
    std::vector<int64_t> out;
    for (const model::NodeInfo* n : nodes) out.push_back(scorer->Score(state, pod, *n));
    scorer->Normalize(state, out);
    return out;
  }
  std::vector<bool> Passes(const policy::Policy& p) {
    const policy::FilterHook* filter = p.AsFilter();
    const model::NodeInfo a = Node("node-a"), b = Node("node-b"), c = Node("node-c");
    model::PodInfo pod;
    policy::RequestState state;
    Status pre = filter->PreFilter(state, pod);
    EXPECT_TRUE(pre.ok()) << pre.ToString();
    std::vector<bool> out;
    for (const model::NodeInfo* n : {&a, &b, &c}) {
      policy::Verdict v = filter->Filter(state, pod, *n);
      EXPECT_NE(v.code, policy::Verdict::Code::kError);
      out.push_back(v.ok());
    }
    return out;
  }

  static bool Near(int64_t got, int64_t want) { return std::llabs(got - want) <= 2; }
  static std::string Show(const std::vector<int64_t>& s) {
    std::string out;
    for (int64_t v : s) out += std::to_string(v) + " ";
    return out;
  }

  testing::FakeNodeExporter exporter_;
  std::unique_ptr<testing::PrometheusServer> prometheus_;
};

// rate() over 5 s: a changed load shows within a few one-second scrapes.
constexpr const char* kCpuQuery =
    "100 * (1 - avg by (instance) (rate(node_cpu_seconds_total{mode=\"idle\"}[5s])))";

TEST_F(NodeLoadPrometheusTest, TargetLoadPackingScoresFollowTheLoadAndGoNeutralWithoutIt) {
  std::unique_ptr<policy::Policy> p =
      MakePolicy({{"prometheus", json::object()},
                  {"queries", {{"cpu", kCpuQuery}}},
                  {"pollIntervalSeconds", 1},
                  {"maxAgeSeconds", 3},
                  {"hotCpuPercent", 90}});
  ASSERT_NE(p, nullptr);
  // a at 10 %: 60 × 10 / 40 + 40 = 55; b at 70 %: 40 × 30 / 60 = 20; c neutral.
  std::vector<int64_t> last;
  EXPECT_TRUE(Eventually(
      [&] {
        last = Scores(*p);
        return Near(last[0], 55) && Near(last[1], 20) && last[2] == 50;
      },
      seconds(90)))
      << "scores " << Show(last) << "\n"
      << prometheus_->LogTail();
  EXPECT_EQ(Passes(*p), (std::vector<bool>{true, true, true}));

  // a heats up to 95 %, b cools to 20 %: a 40 × 5 / 60 = 3 and filtered,
  // b 60 × 20 / 40 + 40 = 70.
  exporter_.Set("node-a", 0.95, 0.50);
  exporter_.Set("node-b", 0.20, 0.25);
  EXPECT_TRUE(Eventually(
      [&] {
        last = Scores(*p);
        return Near(last[0], 3) && Near(last[1], 70) && last[2] == 50;
      },
      seconds(90)))
      << "scores " << Show(last);
  EXPECT_TRUE(Eventually([&] { return Passes(*p) == std::vector<bool>{false, true, true}; },
                         seconds(30)));

  // Prometheus gone: within maxAge (3 s) plus a poll, every node is neutral
  // and nothing is filtered; the hooks keep answering without errors.
  prometheus_->Stop();
  EXPECT_TRUE(Eventually(
      [&] {
        last = Scores(*p);
        return last == std::vector<int64_t>{50, 50, 50};
      },
      seconds(60)))
      << "scores " << Show(last);
  EXPECT_EQ(Passes(*p), (std::vector<bool>{true, true, true}));
}

TEST_F(NodeLoadPrometheusTest, RiskBalancingReadsAverageAndDeviationQueries) {
  const std::string memory =
      "100 * (1 - sum by (instance) (node_memory_MemAvailable_bytes) / sum by (instance) "
      "(node_memory_MemTotal_bytes))";
  const std::string cpu = kCpuQuery;
  std::unique_ptr<policy::Policy> p = MakePolicy(
      {{"mode", "LoadVariationRiskBalancing"},
       {"prometheus", json::object()},
       {"queries",
        {{"cpu", "avg_over_time((" + cpu + ")[10s:1s])"},
         {"cpuStddev", "stddev_over_time((" + cpu + ")[10s:1s])"},
         {"memory", "avg_over_time((" + memory + ")[10s:1s])"},
         {"memoryStddev", "stddev_over_time((" + memory + ")[10s:1s])"}}},
       {"pollIntervalSeconds", 1},
       {"maxAgeSeconds", 3}});
  ASSERT_NE(p, nullptr);
  // Steady loads, so deviations near 0. a: CPU 10 % → 95, memory 50 % → 75:
  // 75. b: CPU 70 % → 65, memory 25 % → 87.5: 65. c: no data, neutral.
  std::vector<int64_t> last;
  EXPECT_TRUE(Eventually(
      [&] {
        last = Scores(*p);
        return Near(last[0], 75) && Near(last[1], 65) && last[2] == 50;
      },
      seconds(90)))
      << "scores " << Show(last) << "\n"
      << prometheus_->LogTail();
}

}  // namespace
}  // namespace schedext
