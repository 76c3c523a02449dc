// NodeLoad's formulas against the test tables of the scheduler-plugins
// project's Trimaran plugins (pkg/trimaran/targetloadpacking and
// pkg/trimaran/loadvariationriskbalancing), case names kept.
#include "policy/builtin/nodeload/formulas.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "testing/model_builders.h"

namespace schedext::policy::nodeload {
namespace {

using test::PodBuilder;
using test::TestArena;

// TestTargetLoadPackingScoring: a node with 1000m of CPU capacity, target 40.
TEST(NodeLoadFormulasTest, TargetLoadPackingTrimaranTable) {
  TestArena arena;
  // A pod without containers predicts 0; "excess utilization" has one
  // container whose limit (and request) is 1000m.
  const model::PodInfo empty = PodBuilder(arena).Name("p").Build();
  const model::PodInfo big =
      PodBuilder(arena).Name("p").Container({{"cpu", 1000}}, {{"cpu", 1000}}).Build();
  struct Case {
    std::string name;
    const model::PodInfo* pod;
    double utilisation;
    int64_t want;
  };
  const std::vector<Case> cases = {
      // (100 − 40) × 0 / 40 + 40
      {"new node", &empty, 0, 40},
      // 50 % > 40: 40 × (100 − 50) / (100 − 40) = 33.3
      {"hot node", &empty, 40 + 10, 33},
      // 30 % + 1000m of 1000m = 130 % > 100
      {"excess utilization returns min score", &big, 30, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const int64_t pod_cpu =
        PredictPodCpuMillis(*c.pod, kDefaultCpuRequestMillis, kDefaultRequestsMultiplier);
    const double predicted = PredictedCpuPercent(c.utilisation, 1000, static_cast<double>(pod_cpu));
    EXPECT_EQ(TargetLoadPackingScore(predicted, kDefaultTargetUtilization), c.want);
  }
}

TEST(NodeLoadFormulasTest, TargetLoadPackingShape) {
  struct Case {
    double predicted;
    double target;
    int64_t want;
  };
  const std::vector<Case> cases = {
      {40, 40, 100},   // at the target: (60 × 40 / 40) + 40
      {20, 40, 70},    // 60 × 20 / 40 + 40
      {70, 40, 20},    // 40 × 30 / 60
      {100, 40, 0},    // 40 × 0 / 60
      {100.5, 40, 0},  // over capacity
      {80, 80, 100},
      {90, 80, 40},  // 80 × 10 / 20
      {0, 80, 80},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.predicted) + "% target " + std::to_string(c.target));
    EXPECT_EQ(TargetLoadPackingScore(c.predicted, c.target), c.want);
  }
}

TEST(NodeLoadFormulasTest, PredictedCpuPercentAddsMillisToTheMeasuredShare) {
  EXPECT_DOUBLE_EQ(PredictedCpuPercent(25, 4000, 1000), 50);  // 1000m used + 1000m
  EXPECT_DOUBLE_EQ(PredictedCpuPercent(0, 2000, 0), 0);
  EXPECT_DOUBLE_EQ(PredictedCpuPercent(50, 0, 500), 0);  // no capacity: as Trimaran
}

// Trimaran's PredictUtilisation: limit, else request × multiplier, else the
// default; plus overhead.
TEST(NodeLoadFormulasTest, PredictPodCpuMillis) {
  TestArena arena;
  const model::PodInfo pod = PodBuilder(arena)
                                 .Container({{"cpu", 200}}, {{"cpu", 500}})  // limit: 500
                                 .Container({{"cpu", 300}})                  // 300 × 1.5 = 450
                                 .Container({{"memory", 1 << 20}})           // default: 1000
                                 .Overhead("cpu", 50)
                                 .Build();
  EXPECT_EQ(PredictPodCpuMillis(pod, 1000, 1.5), 500 + 450 + 1000 + 50);
  EXPECT_EQ(PredictPodCpuMillis(pod, 2000, 2), 500 + 600 + 2000 + 50);
  EXPECT_EQ(PredictPodCpuMillis(PodBuilder(arena).Build(), 1000, 1.5), 0);
}

// TestComputeScore of loadvariationriskbalancing/analysis_test.go.
TEST(NodeLoadFormulasTest, RiskBalancingTrimaranTable) {
  struct Case {
    std::string name;
    double margin;
    double sensitivity;
    ResourceStats stats;  // capacity, request, used_avg, used_stddev
    int64_t want;
  };
  const std::vector<Case> cases = {
      // mu = 0.5, sigma = 0.36: (1 − 0.43) × 100
      {"valid data", 1, 1, {100, 10, 40, 36}, 57},
      {"zero capacity", 1, 2, {0, 10, 40, 36}, 0},
      // mu = 0.1, sigma = √0.36 = 0.6: (1 − 0.35) × 100
      {"negative usedAvg", 1, 2, {100, 10, -40, 36}, 65},
      // mu = 1, sigma = 0.6: (1 − 0.8) × 100
      {"large usedAvg", 1, 2, {100, 10, 200, 36}, 20},
      // mu = 0.5, sigma = 0
      {"negative usedStdev", 1, 2, {100, 10, 40, -36}, 75},
      // mu = 0.5, sigma = 1
      {"large usedStdev", 1, 2, {100, 10, 40, 120}, 25},
      // sigma × −1 clamps to 0
      {"negative margin", -1, 1, {100, 10, 40, 36}, 75},
      // no root taken
      {"negative sensitivity", 1, -1, {100, 10, 40, 36}, 57},
      // root of infinite order of 0.36: 0
      {"zero sensitivity", 1, 0, {100, 10, 40, 36}, 75},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(std::llround(RiskBalancingScore(c.stats, c.margin, c.sensitivity)), c.want);
  }
}

// TestScore of loadvariationriskbalancing_test.go: node of 1000m and 1 GiB;
// each resource scored on its own, the total the lower one (the one with
// data when only one has).
TEST(NodeLoadFormulasTest, RiskBalancingPluginTable) {
  const double mib = 1024.0 * 1024.0;
  const double gib = 1024 * mib;
  auto cpu = [](double avg, double stddev, double request) {
    return RiskBalancingScore({1000, request, avg * 10, stddev * 10}, 1, 1);
  };
  auto memory = [&](double avg, double stddev, double request) {
    return RiskBalancingScore({gib, request, avg * gib / 100, stddev * gib / 100}, 1, 1);
  };
  // "new node": CPU average 50 %, empty pod: mu 0.5 → 75
  EXPECT_EQ(std::llround(cpu(50, 0, 0)), 75);
  // "hot node": 100 % → mu 1 → 50
  EXPECT_EQ(std::llround(cpu(100, 0, 0)), 50);
  // "average and stDev metrics": 30 % ± 16, 200m: mu 0.5, sigma 0.16 → 67
  EXPECT_EQ(std::llround(cpu(30, 16, 200)), 67);
  // "CPU and Memory metrics": CPU 40 % ± 16 + 100m → 67; memory 50 % ± 10
  // + 512 MiB → mu 1, sigma 0.1 → 45; the lower: 45
  EXPECT_EQ(std::llround(std::min(cpu(40, 16, 100), memory(50, 10, 512 * mib))), 45);
  // "pick worst case: CPU or Memory": CPU 80 % ± 20 + 100m → mu 0.9, sigma
  // 0.2 → 45; memory 25 % ± 15 + 512 MiB → mu 0.75, sigma 0.15 → 55: 45
  EXPECT_EQ(std::llround(std::min(cpu(80, 20, 100), memory(25, 15, 512 * mib))), 45);
}

}  // namespace
}  // namespace schedext::policy::nodeload
