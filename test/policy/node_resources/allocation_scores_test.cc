#include "policy/builtin/node_resources/allocation_scores.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/config/config.h"
#include "schedext/pipeline/explain.h"
#include "schedext/pipeline/profile.h"
#include "schedext/policy/policy.h"
#include "schedext/policy/registry.h"
#include "testing/model_builders.h"

namespace schedext::policy {
namespace {

using nlohmann::json;
using test::NodeBuilder;
using test::PodBuilder;
using test::ResourceAmounts;
using test::TestArena;

using Factory = std::function<StatusOr<std::unique_ptr<Policy>>(const json&, const PolicyContext&)>;

// The upstream tests give cpu in cores ("4000") and we in milli-cores (4000):
// both sides of every ratio scale alike, so the integer results are the same.
// Their "existing pods" become each node's usage; their extendedRes is
// "abc.com/xyz".
constexpr std::string_view kExtended = "abc.com/xyz";

struct ScoreCase {
  std::string name;
  std::string args;
  model::PodInfo pod;
  std::vector<model::NodeInfo> nodes;
  std::vector<int64_t> want;
};

std::unique_ptr<Policy> MustCreate(const Factory& factory, std::string_view args) {
  StatusOr<std::unique_ptr<Policy>> policy = factory(json::parse(args), PolicyContext{});
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return policy.ok() ? std::move(*policy) : nullptr;
}

// PreScore, Score per node, Normalize: what the pipeline does with one scorer.
std::vector<int64_t> ScoreNodes(const Policy& policy, const model::PodInfo& pod,
                                const std::vector<model::NodeInfo>& nodes) {
  const ScoreHook* scorer = policy.AsScorer();
  EXPECT_NE(scorer, nullptr);
  if (scorer == nullptr) {
    return {};
  }
  std::vector<const model::NodeInfo*> pointers = test::NodePointers(nodes);
  RequestState state;
  Status status = scorer->PreScore(state, pod, pointers);
  EXPECT_TRUE(status.ok()) << status.ToString();
  // The pipeline's path: the whole block in one ScoreNodes call. Explain's
  // node-by-node Score must give the same raw scores.
  std::vector<int64_t> scores(nodes.size(), -1);
  scorer->ScoreNodes(state, pod, pointers, scores);
  std::vector<int64_t> one_by_one;
  for (const model::NodeInfo& node : nodes) {
    one_by_one.push_back(scorer->Score(state, pod, node));
  }
  EXPECT_EQ(scores, one_by_one);
  scorer->Normalize(state, scores);
  return scores;
}

void RunScoreCases(const Factory& factory, const std::vector<ScoreCase>& cases) {
  for (const ScoreCase& c : cases) {
    SCOPED_TRACE(c.name);
    StatusOr<std::unique_ptr<Policy>> policy = factory(json::parse(c.args), PolicyContext{});
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    EXPECT_EQ(ScoreNodes(**policy, c.pod, c.nodes), c.want);
  }
}

// A node with `allocatable` whose pods request `requested` (plain and scoring alike).
model::NodeInfo Node(TestArena& arena, ResourceAmounts allocatable,
                     ResourceAmounts requested = {}) {
  return NodeBuilder(arena).Allocatable(allocatable).Usage(0, requested).Build();
}

// A pod whose containers each request one entry of `containers`.
model::PodInfo Pod(TestArena& arena, std::initializer_list<ResourceAmounts> containers = {}) {
  PodBuilder builder(arena);
  for (ResourceAmounts requests : containers) {
    builder.Container(requests);
  }
  return builder.Build();
}

// least_allocated_test.go TestLeastAllocatedScoringStrategy.
// Per resource ((alloc - req) * 100) / alloc, 0 if req > alloc; then
// Σ score·weight / Σ weight, both divisions truncating.
TEST(LeastAllocatedTest, ReproducesUpstreamScores) {
  TestArena arena;
  const model::PodInfo nothing = Pod(arena);
  // {cpu 1000, memory 2000} + {cpu 2000, memory 3000} = 3000 / 5000.
  const model::PodInfo cpu3000_mem5000 =
      Pod(arena, {{{"cpu", 1000}, {"memory", 2000}}, {{"cpu", 2000}, {"memory", 3000}}});
  const std::vector<ScoreCase> cases = {
      // (4000-0)*100/4000 = 100, (10000-0)*100/10000 = 100 → 100 on both.
      {"nothing scheduled, nothing requested",
       "{}",
       nothing,
       {Node(arena, {{"cpu", 4000}, {"memory", 10000}}),
        Node(arena, {{"cpu", 4000}, {"memory", 10000}})},
       {100, 100}},
      // n1: (1000*100)/4000 = 25, (5000*100)/10000 = 50 → 75/2 = 37.
      // n2: (3000*100)/6000 = 50, 50 → 50.
      {"nothing scheduled, resources requested, differently sized nodes",
       "{}",
       cpu3000_mem5000,
       {Node(arena, {{"cpu", 4000}, {"memory", 10000}}),
        Node(arena, {{"cpu", 6000}, {"memory", 10000}})},
       {37, 50}},
      // Containerless pods count nothing: 100 on both.
      {"no resources requested, pods scheduled",
       "{}",
       nothing,
       {Node(arena, {{"cpu", 4000}, {"memory", 10000}}),
        Node(arena, {{"cpu", 4000}, {"memory", 10000}})},
       {100, 100}},
      // n1: (4000*100)/10000 = 40, 100 → 70. n2: 40, (15000*100)/20000 = 75 → 115/2 = 57.
      {"no resources requested, pods scheduled with resources",
       "{}",
       nothing,
       {Node(arena, {{"cpu", 10000}, {"memory", 20000}}, {{"cpu", 6000}, {"memory", 0}}),
        Node(arena, {{"cpu", 10000}, {"memory", 20000}}, {{"cpu", 6000}, {"memory", 5000}})},
       {70, 57}},
      // n1: 40, (15000*100)/20000 = 75 → 57. n2: 40, (10000*100)/20000 = 50 → 45.
      {"resources requested, pods scheduled with resources",
       "{}",
       cpu3000_mem5000,
       {Node(arena, {{"cpu", 10000}, {"memory", 20000}}, {{"cpu", 3000}, {"memory", 0}}),
        Node(arena, {{"cpu", 10000}, {"memory", 20000}}, {{"cpu", 3000}, {"memory", 5000}})},
       {57, 45}},
      // n2: 40, (40000*100)/50000 = 80 → 60.
      {"resources requested, pods scheduled with resources, differently sized nodes",
       "{}",
       cpu3000_mem5000,
       {Node(arena, {{"cpu", 10000}, {"memory", 20000}}, {{"cpu", 3000}, {"memory", 0}}),
        Node(arena, {{"cpu", 10000}, {"memory", 50000}}, {{"cpu", 3000}, {"memory", 5000}})},
       {57, 60}},
      // cpu 6000 > 4000 → 0. n1: (0 + 100)/2 = 50. n2: (0 + 50)/2 = 25.
      {"requested resources exceed node capacity",
       "{}",
       Pod(arena, {{{"cpu", 3000}, {"memory", 0}}}),
       {Node(arena, {{"cpu", 4000}, {"memory", 10000}}, {{"cpu", 3000}, {"memory", 0}}),
        Node(arena, {{"cpu", 4000}, {"memory", 10000}}, {{"cpu", 3000}, {"memory", 5000}})},
       {50, 25}},
      // Zero allocatable skips both resources; no weight ⇒ 0.
      {"zero node resources, pods scheduled with resources",
       "{}",
       nothing,
       {Node(arena, {}, {{"cpu", 3000}, {"memory", 0}}),
        Node(arena, {}, {{"cpu", 3000}, {"memory", 5000}})},
       {0, 0}},
      // n1: (25*1 + 50*2)/3 = 41. n2: (50 + 100)/3 = 50.
      {"nothing scheduled, resources requested with different weight on CPU and memory, "
       "differently sized nodes",
       R"({"resources": [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}]})",
       cpu3000_mem5000,
       {Node(arena, {{"cpu", 4000}, {"memory", 10000}}),
        Node(arena, {{"cpu", 6000}, {"memory", 10000}})},
       {41, 50}},
      // The pod does not request abc.com/xyz: skipped. (50 + 50)/2 on both.
      {"bypass extended resource if the pod does not request",
       R"({"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "abc.com/xyz"}]})",
       cpu3000_mem5000,
       {Node(arena, {{"cpu", 6000}, {"memory", 10000}}),
        Node(arena, {{"cpu", 6000}, {"memory", 10000}, {kExtended, 4}})},
       {50, 50}},
      // xyz: n1 (4-2)*100/4 = 50 → 150/3 = 50; n2 (10-2)*100/10 = 80 → 180/3 = 60.
      {"honor extended resource if the pod requests",
       R"({"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "abc.com/xyz"}]})",
       Pod(arena, {{{"cpu", 3000}, {"memory", 5000}, {kExtended, 2}}}),
       {Node(arena, {{"cpu", 6000}, {"memory", 10000}, {kExtended, 4}}),
        Node(arena, {{"cpu", 6000}, {"memory", 10000}, {kExtended, 10}})},
       {50, 60}},
      // Not requested ⇒ xyz (weight 2) skipped: (50*1 + 60*1)/2 = 55 on both.
      {"if the node doesn't have a resource",
       R"({"resources": [{"name": "abc.com/xyz", "weight": 2}, {"name": "cpu", "weight": 1},
                         {"name": "memory", "weight": 1}]})",
       Pod(arena, {{{"cpu", 3000}, {"memory", 4000}}}),
       {Node(arena, {{"cpu", 6000}, {"memory", 10000}}),
        Node(arena, {{"cpu", 6000}, {"memory", 10000}, {kExtended, 4}})},
       {55, 55}},
  };
  RunScoreCases(NewLeastAllocated, cases);
}

// The non-zero scoring requests: a container without a request counts 100m /
// 200Mi, both in the node's usage (scoring_requested) and for the pod.
TEST(LeastAllocatedTest, UsesTheScoringRequestsForCpuAndMemory) {
  TestArena arena;
  const model::PodInfo bare = PodBuilder(arena).Container({}).Build();
  const model::NodeInfo node = NodeBuilder(arena)
                                   .Allocatable({{"cpu", 1000}, {"memory", 1 << 30}})
                                   .Usage(1, {}, {{"cpu", 100}, {"memory", 200 << 20}})
                                   .Build();
  std::unique_ptr<Policy> policy = MustCreate(NewLeastAllocated, "{}");
  // cpu: (1000 - 200)*100/1000 = 80.
  // memory: (1073741824 - 419430400)*100/1073741824 = 60.9 → 60.  (80 + 60)/2 = 70.
  EXPECT_EQ(ScoreNodes(*policy, bare, {node}), std::vector<int64_t>{70});
}

// With pod-level requests the pod being placed and the pods on the node take
// the defaults differently (calculatePodResourceRequest vs CalculateResource):
// here a 300m container and a request-less one under a pod-level 512Mi. As
// the pod to place it counts 300m + 100m (default) = 400m; on its node, cpu
// being named by a container, only 300m.
TEST(LeastAllocatedTest, PodLevelPodsTakeTheDefaultsAsKubeSchedulerDoes) {
  TestArena arena;
  constexpr int64_t kMi = 1 << 20;
  const model::PodInfo pod = PodBuilder(arena)
                                .Container({{"cpu", 300}})
                                .Container({})
                                .PodLevel({{"memory", 512 * kMi}})
                                .Build();
  const model::NodeInfo node = NodeBuilder(arena)
                                   .Allocatable({{"cpu", 1000}, {"memory", 1024 * kMi}})
                                   .UsageOf(std::vector<model::PodInfo>{pod})
                                   .Build();
  std::unique_ptr<Policy> policy = MustCreate(NewLeastAllocated, "{}");
  // cpu: 300 + 400 = 700 → (1000 - 700)*100/1000 = 30; memory: 512Mi + 512Mi
  // = all of it → 0. (30 + 0)/2 = 15.
  EXPECT_EQ(ScoreNodes(*policy, pod, {node}), std::vector<int64_t>{15});
}

// most_allocated_test.go TestMostAllocatedScoringStrategy.
// Per resource (min(req, alloc) * 100) / alloc; then the weighted mean.
TEST(MostAllocatedTest, ReproducesUpstreamScores) {
  TestArena arena;
  const model::PodInfo nothing = Pod(arena);
  const model::PodInfo cpu3000_mem5000 =
      Pod(arena, {{{"cpu", 1000}, {"memory", 2000}}, {{"cpu", 2000}, {"memory", 3000}}});
  // Two existing pods with one request-less container each: 2 × (100m, 200Mi).
  const model::PodInfo bare = PodBuilder(arena).Container({}).Build();
  const std::vector<model::PodInfo> two_bare = {bare, bare};
  constexpr int64_t kMi = 1 << 20;
  const std::vector<ScoreCase> cases = {
      {"nothing scheduled, nothing requested",
       "{}",
       nothing,
       {Node(arena, {{"cpu", 4000}, {"memory", 10000}}),
        Node(arena, {{"cpu", 4000}, {"memory", 10000}})},
       {0, 0}},
      // n1: 3000*100/4000 = 75, 5000*100/10000 = 50 → 125/2 = 62. n2: 50, 50 → 50.
      {"nothing scheduled, resources requested, differently sized nodes",
       "{}",
       cpu3000_mem5000,
       {Node(arena, {{"cpu", 4000}, {"memory", 10000}}),
        Node(arena, {{"cpu", 6000}, {"memory", 10000}})},
       {62, 50}},
      // n1: 6000*100/10000 = 60, 0 → 30. n2: 60, 5000*100/20000 = 25 → 85/2 = 42.
      {"no resources requested, pods scheduled with resources",
       "{}",
       nothing,
       {Node(arena, {{"cpu", 10000}, {"memory", 20000}}, {{"cpu", 6000}, {"memory", 0}}),
        Node(arena, {{"cpu", 10000}, {"memory", 20000}}, {{"cpu", 6000}, {"memory", 5000}})},
       {30, 42}},
      // n1: 60, 25 → 42. n2: 60, 10000*100/20000 = 50 → 55.
      {"resources requested, pods scheduled with resources",
       "{}",
       cpu3000_mem5000,
       {Node(arena, {{"cpu", 10000}, {"memory", 20000}}, {{"cpu", 3000}, {"memory", 0}}),
        Node(arena, {{"cpu", 10000}, {"memory", 20000}}, {{"cpu", 3000}, {"memory", 5000}})},
       {42, 55}},
      // Pod 5000 / 9000. n1: 100, 90 → 95. n2: 50, 100 → 75.
      {"resources requested equal node capacity",
       "{}",
       Pod(arena, {{{"cpu", 2000}, {"memory", 4000}}, {{"cpu", 3000}, {"memory", 5000}}}),
       {Node(arena, {{"cpu", 5000}, {"memory", 10000}}),
        Node(arena, {{"cpu", 10000}, {"memory", 9000}})},
       {95, 75}},
      // n1: (75*1 + 50*2)/3 = 58. n2: 50.
      {"nothing scheduled, resources requested, differently sized nodes, weighted",
       R"({"resources": [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}]})",
       cpu3000_mem5000,
       {Node(arena, {{"cpu", 4000}, {"memory", 10000}}),
        Node(arena, {{"cpu", 6000}, {"memory", 10000}})},
       {58, 50}},
      // Scoring defaults: n1 cpu 3 × 100 = 300 > 250 → capped, 100; memory
      // 600Mi*100/1000Mi = 60 → 80. n2: 100*100/250 = 40, 200Mi → 20 → 30.
      {"no resources requested, pods scheduled, nonzero request for resource",
       "{}",
       bare,
       {NodeBuilder(arena)
            .Allocatable({{"cpu", 250}, {"memory", 1000 * kMi}})
            .UsageOf(two_bare)
            .Build(),
        NodeBuilder(arena)
            .Allocatable({{"cpu", 250}, {"memory", 1000 * kMi}})
            .Usage(0, {})
            .Build()},
       {80, 30}},
      {"bypass extended resource if the pod does not request",
       R"({"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "abc.com/xyz"}]})",
       cpu3000_mem5000,
       {Node(arena, {{"cpu", 6000}, {"memory", 10000}}),
        Node(arena, {{"cpu", 6000}, {"memory", 10000}, {kExtended, 4}})},
       {50, 50}},
      // xyz: n1 2*100/4 = 50 → 50; n2 2*100/10 = 20 → 120/3 = 40.
      {"honor extended resource if the pod request",
       R"({"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "abc.com/xyz"}]})",
       Pod(arena, {{{"cpu", 3000}, {"memory", 5000}, {kExtended, 2}}}),
       {Node(arena, {{"cpu", 6000}, {"memory", 10000}, {kExtended, 4}}),
        Node(arena, {{"cpu", 6000}, {"memory", 10000}, {kExtended, 10}})},
       {50, 40}},
      // (50 + 40)/2 = 45 on both; xyz not requested.
      {"if the node doesn't have a resource",
       R"({"resources": [{"name": "abc.com/xyz", "weight": 2}, {"name": "cpu", "weight": 1},
                         {"name": "memory", "weight": 1}]})",
       Pod(arena, {{{"cpu", 3000}, {"memory", 4000}}}),
       {Node(arena, {{"cpu", 6000}, {"memory", 10000}}),
        Node(arena, {{"cpu", 6000}, {"memory", 10000}, {kExtended, 4}})},
       {45, 45}},
  };
  RunScoreCases(NewMostAllocated, cases);
}

// requested_to_capacity_ratio_test.go. Shape scores are ×10; per resource
// f(req*100/alloc) (f(100) if req > alloc), counted only when > 0; the mean
// is math.Round(Σ score·w / Σ w).
TEST(RequestedToCapacityRatioTest, ReproducesUpstreamScores) {
  TestArena arena;
  const std::string least = R"({"shape": [{"utilization": 0, "score": 10},
                                          {"utilization": 100, "score": 0}]})";
  const std::string foo = R"({"resources": [{"name": "intel.com/foo"}],
                              "shape": [{"utilization": 0, "score": 0},
                                        {"utilization": 100, "score": 1}]})";
  auto foo_node = [&arena](int64_t foo_allocatable, int64_t foo_requested) {
    return NodeBuilder(arena)
        .Allocatable({{"cpu", 4000}, {"memory", 10000LL << 20}, {"intel.com/foo", foo_allocatable}})
        .Usage(0, {{"intel.com/foo", foo_requested}})
        .Build();
  };
  const model::PodInfo cpu3000_mem5000 =
      Pod(arena, {{{"cpu", 1000}, {"memory", 2000}}, {{"cpu", 2000}, {"memory", 3000}}});
  const std::vector<ScoreCase> cases = {
      // TestRequestedToCapacityRatioScoringStrategy. f = {0:100, 100:0}.
      // Utilization 0 → f(0) = 100 on every resource → 100.
      {"nothing scheduled, nothing requested (default - least requested nodes have priority)",
       least,
       Pod(arena),
       {Node(arena, {{"cpu", 4000}, {"memory", 10000}}),
        Node(arena, {{"cpu", 4000}, {"memory", 10000}})},
       {100, 100}},
      // n1: cpu 3000*100/4000 = 75 → 100 - 100*75/100 = 25; memory 50 → 50;
      // round(75/2 = 37.5) = 38. n2: 50, 50 → 50.
      {"nothing scheduled, resources requested, differently sized nodes (default - least "
       "requested nodes have priority)",
       least,
       cpu3000_mem5000,
       {Node(arena, {{"cpu", 4000}, {"memory", 10000}}),
        Node(arena, {{"cpu", 6000}, {"memory", 10000}})},
       {38, 50}},
      {"no resources requested, pods scheduled with resources (default - least requested "
       "nodes have priority)",
       least,
       Pod(arena),
       {Node(arena, {{"cpu", 4000}, {"memory", 10000}}, {{"cpu", 3000}, {"memory", 5000}}),
        Node(arena, {{"cpu", 6000}, {"memory", 10000}}, {{"cpu", 3000}, {"memory", 5000}})},
       {38, 50}},
      // TestResourceBinPackingSingleExtended, f = {0:0, 100:10}.
      // foo not requested: skipped, no weight → 0.
      {"nothing scheduled, nothing requested",
       foo,
       Pod(arena),
       {foo_node(8, 0), foo_node(4, 0)},
       {0, 0}},
      // n1: 2*100/8 = 25 → 10*25/100 = 2. n2: 2*100/4 = 50 → 5.
      {"resources requested, pods scheduled with less resources",
       foo,
       Pod(arena, {{{"intel.com/foo", 2}}}),
       {foo_node(8, 0), foo_node(4, 0)},
       {2, 5}},
      // n2: (2+2)*100/4 = 100 → 10.
      {"resources requested, pods scheduled with resources, on node with existing pod running ",
       foo,
       Pod(arena, {{{"intel.com/foo", 2}}}),
       {foo_node(8, 0), foo_node(4, 2)},
       {2, 10}},
      // n1: 4*100/8 = 50 → 5. n2: 4*100/4 = 100 → 10.
      {"resources requested, pods scheduled with more resources",
       foo,
       Pod(arena, {{{"intel.com/foo", 4}}}),
       {foo_node(8, 0), foo_node(4, 0)},
       {5, 10}},
  };
  RunScoreCases(NewRequestedToCapacityRatio, cases);
}

// TestResourceBinPackingMultipleExtended, first two cases: weights foo 3, bar 5,
// f = {0:0, 100:10}.
TEST(RequestedToCapacityRatioTest, ReproducesUpstreamMultipleExtended) {
  TestArena arena;
  const std::string args = R"({"resources": [{"name": "intel.com/foo", "weight": 3},
                                             {"name": "intel.com/bar", "weight": 5}],
                               "shape": [{"utilization": 0, "score": 0},
                                         {"utilization": 100, "score": 1}]})";
  const model::NodeInfo n1 =
      Node(arena,
           {{"cpu", 4000}, {"memory", 10000LL << 20}, {"intel.com/foo", 8}, {"intel.com/bar", 4}});
  const model::NodeInfo n2 =
      Node(arena,
           {{"cpu", 4000}, {"memory", 10000LL << 20}, {"intel.com/foo", 4}, {"intel.com/bar", 8}});
  const std::vector<ScoreCase> cases = {
      {"nothing scheduled, nothing requested", args, Pod(arena), {n1, n2}, {0, 0}},
      // n1: foo 2/8 = 25 → 2, bar 2/4 = 50 → 5: round((2*3 + 5*5)/8 = 3.875) = 4.
      // n2: foo 50 → 5, bar 25 → 2: round((15 + 10)/8 = 3.125) = 3.
      {"resources requested, pods scheduled with less resources",
       args,
       Pod(arena, {{{"intel.com/foo", 2}, {"intel.com/bar", 2}}}),
       {n1, n2},
       {4, 3}},
  };
  RunScoreCases(NewRequestedToCapacityRatio, cases);
}

// TestBrokenLinearFunction's second and third shapes (×10 here), read through a
// single cpu resource of 100m so that utilization = the pod's cpu request. A
// zero score does not count towards the weights, which gives 0 as well.
TEST(RequestedToCapacityRatioTest, FollowsTheBrokenLineBetweenShapePoints) {
  struct Case {
    std::string shape;
    int64_t utilization;
    int64_t want;
  };
  const std::string peak = R"([{"utilization": 0, "score": 2}, {"utilization": 40, "score": 10},
                              {"utilization": 100, "score": 0}])";
  const std::string flat = R"([{"utilization": 0, "score": 2}, {"utilization": 40, "score": 2},
                              {"utilization": 100, "score": 2}])";
  const std::string late = R"([{"utilization": 50, "score": 3}, {"utilization": 90, "score": 9}])";
  const std::vector<Case> cases = {
      {peak, 0, 20},    // shape[0]
      {peak, 20, 60},   // 20 + (100-20)*(20-0)/(40-0)
      {peak, 30, 80},   // 20 + 80*30/40
      {peak, 40, 100},  // shape[1]
      {peak, 70, 50},   // 100 + (0-100)*(70-40)/(100-40)
      {peak, 100, 0},   // shape[2]
      {peak, 150, 0},   // requested > allocatable ⇒ f(100)
      {flat, 0, 20},   {flat, 20, 20}, {flat, 70, 20},
      {flat, 100, 20}, {late, 10, 30},  // below the first point: its score
      {late, 55, 37},                   // 30 + 60*5/40 = 37.5 → 37 (integer division)
      {late, 95, 90},                   // beyond the last point: its score
  };
  TestArena arena;
  const model::NodeInfo node = Node(arena, {{"cpu", 100}, {"memory", 100}});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.shape + " at " + std::to_string(c.utilization));
    const std::string args = R"({"resources": [{"name": "cpu"}], "shape": )" + c.shape + "}";
    StatusOr<std::unique_ptr<Policy>> policy = NewRequestedToCapacityRatio(json::parse(args), {});
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    const model::PodInfo pod =
        PodBuilder(arena).Container({{"cpu", c.utilization}, {"memory", 0}}).Build();
    EXPECT_EQ(ScoreNodes(**policy, pod, {node}), std::vector<int64_t>{c.want});
  }
}

// balanced_allocation_test.go TestNodeResourcesBalancedAllocation. Fractions
// are requested/allocatable capped at 1 with the plain requests (useRequested);
// std = |f0 - f1|/2 for two, sqrt(Σ(f - mean)²/n) for more; (1 - std)*100
// truncated.
TEST(BalancedAllocationTest, ReproducesUpstreamScores) {
  TestArena arena;
  // Upstream's pod specs: cpuOnly = 1000m+2000m cpu, memory "0";
  // cpuAndMemory = 3000m / 5000; cpuAndMemoryAndGPU adds nvidia.com/gpu 3.
  const ResourceAmounts cpu_only = {{"cpu", 3000}, {"memory", 0}};
  const ResourceAmounts cpu_and_memory = {{"cpu", 3000}, {"memory", 5000}};
  const model::PodInfo cpu_only_pod =
      Pod(arena, {{{"cpu", 1000}, {"memory", 0}}, {{"cpu", 2000}, {"memory", 0}}});
  const model::PodInfo cpu_and_memory_pod =
      Pod(arena, {{{"cpu", 1000}, {"memory", 2000}}, {{"cpu", 2000}, {"memory", 3000}}});
  const std::string three = R"({"resources": [{"name": "cpu"}, {"name": "memory"},
                                              {"name": "nvidia.com/gpu"}]})";
  const std::vector<ScoreCase> cases = {
      // Fractions 0, 0 → std 0 → 100.
      {"nothing scheduled, nothing requested",
       "{}",
       Pod(arena),
       {Node(arena, {{"cpu", 4000}, {"memory", 10000}}),
        Node(arena, {{"cpu", 4000}, {"memory", 10000}})},
       {100, 100}},
      // n1: 3000/4000 = 0.75, 5000/10000 = 0.5 → std 0.125 → 87.5 → 87. n2: 0.5, 0.5 → 100.
      {"nothing scheduled, resources requested, differently sized nodes",
       "{}",
       cpu_and_memory_pod,
       {Node(arena, {{"cpu", 4000}, {"memory", 10000}}),
        Node(arena, {{"cpu", 6000}, {"memory", 10000}})},
       {87, 100}},
      // n1: 0.6, 0 → std 0.3 → 70. n2: 0.6, 0.25 → std 0.175 → 82.5 → 82.
      {"no resources requested, pods scheduled with resources",
       "{}",
       Pod(arena),
       {Node(arena, {{"cpu", 10000}, {"memory", 20000}}, {{"cpu", 6000}, {"memory", 0}}),
        Node(arena, {{"cpu", 10000}, {"memory", 20000}}, {{"cpu", 6000}, {"memory", 5000}})},
       {70, 82}},
      // n1: 0.6, 0.25 → 82. n2: 0.6, 0.5 → std 0.05 → 95.
      {"resources requested, pods scheduled with resources",
       "{}",
       cpu_and_memory_pod,
       {Node(arena, {{"cpu", 10000}, {"memory", 20000}}, cpu_only),
        Node(arena, {{"cpu", 10000}, {"memory", 20000}}, cpu_and_memory)},
       {82, 95}},
      // n2: 0.6, 10000/50000 = 0.2 → std 0.2 → 80.
      {"resources requested, pods scheduled with resources, differently sized nodes",
       "{}",
       cpu_and_memory_pod,
       {Node(arena, {{"cpu", 10000}, {"memory", 20000}}, cpu_only),
        Node(arena, {{"cpu", 10000}, {"memory", 50000}}, cpu_and_memory)},
       {82, 80}},
      // n1: 6000/6000 = 1, 0 → std 0.5 → 50. n2: 1, 0.5 → std 0.25 → 75.
      {"requested resources at node capacity",
       "{}",
       cpu_only_pod,
       {Node(arena, {{"cpu", 6000}, {"memory", 10000}}, cpu_only),
        Node(arena, {{"cpu", 6000}, {"memory", 10000}}, cpu_and_memory)},
       {50, 75}},
      // Zero allocatable: nothing scored, std 0 → 100.
      {"zero node resources, pods scheduled with resources",
       "{}",
       Pod(arena),
       {Node(arena, {}, cpu_only), Node(arena, {}, cpu_and_memory)},
       {100, 100}},
      // n1: 3000/3500, 5000/40000 = 0.125, (3+1)/8 = 0.5 → std 0.2989 → 70.1 → 70.
      // n2: 0.857, 0.125, (0+1)/8 = 0.125 → std 0.3451 → 65.5 → 65.
      {"include scalar resource on a node for balanced resource allocation",
       three,
       Pod(arena, {{{"memory", 0}, {"nvidia.com/gpu", 1}}}),
       {Node(arena, {{"cpu", 3500}, {"memory", 40000}, {"nvidia.com/gpu", 8}},
             {{"cpu", 3000}, {"memory", 5000}, {"nvidia.com/gpu", 3}}),
        Node(arena, {{"cpu", 3500}, {"memory", 40000}, {"nvidia.com/gpu", 8}}, cpu_and_memory)},
       {70, 65}},
      // The pod does not request the gpu: only cpu is scored, one fraction, std 0.
      {"node without the scalar resource results to a higher score",
       R"({"resources": [{"name": "cpu"}, {"name": "nvidia.com/gpu"}]})",
       Pod(arena),
       {Node(arena, {{"cpu", 3500}, {"memory", 40000}, {"nvidia.com/gpu", 8}}, cpu_only),
        Node(arena, {{"cpu", 3500}, {"memory", 40000}}, cpu_only)},
       {100, 100}},
  };
  RunScoreCases(NewBalancedAllocation, cases);
}

// BalancedAllocation counts the plain requests (useRequested: true): neither the
// node's scoring requests nor the pod's 100m / 200Mi defaults.
TEST(BalancedAllocationTest, UsesThePlainRequests) {
  TestArena arena;
  std::unique_ptr<Policy> policy = MustCreate(NewBalancedAllocation, "{}");
  // The node's usage: plain 500/1000 and 500/1000 → std 0 → 100; the scoring
  // values (900/1000, 500/1000) would give std 0.2 → 80.
  const model::PodInfo zero = PodBuilder(arena).Container({{"cpu", 0}, {"memory", 0}}).Build();
  const model::NodeInfo used =
      NodeBuilder(arena)
          .Allocatable({{"cpu", 1000}, {"memory", 1000}})
          .Usage(1, {{"cpu", 500}, {"memory", 500}}, {{"cpu", 900}, {"memory", 500}})
          .Build();
  EXPECT_EQ(ScoreNodes(*policy, zero, {used}), std::vector<int64_t>{100});
  // The pod: no requests → 0, 0 → 100; the defaults (100/1000, 200Mi/1Gi)
  // would give std 0.0477 → 95.
  const model::PodInfo bare = PodBuilder(arena).Container({}).Build();
  const model::NodeInfo empty =
      NodeBuilder(arena).Allocatable({{"cpu", 1000}, {"memory", 1 << 30}}).Usage(0, {}).Build();
  EXPECT_EQ(ScoreNodes(*policy, bare, {empty}), std::vector<int64_t>{100});
  // Cross-check of that claim with LeastAllocated, which does use the defaults:
  // (900*100/1000 = 90 + 80.47 → 80)/2 = 85.
  std::unique_ptr<Policy> least = MustCreate(NewLeastAllocated, "{}");
  EXPECT_EQ(ScoreNodes(*least, bare, {empty}), std::vector<int64_t>{85});
}

TEST(AllocationScoresTest, NodesWithoutUsageFailTheRequest) {
  // Without the cluster cache (full mode, no Kubernetes API connection) nodes
  // carry no usage: the pipeline fails the request, in RunScorers and in
  // Explain, as if PreScore had, before Score sees such a node.
  TestArena arena;
  const model::PodInfo pod = Pod(arena);
  const std::vector<model::NodeInfo> nodes = {
      Node(arena, {{"cpu", 1000}}),
      NodeBuilder(arena).Name("cold").Allocatable({{"cpu", 1000}}).Build()};
  const std::vector<const model::NodeInfo*> pointers = test::NodePointers(nodes);
  const std::vector<const model::NodeInfo*> warm = {pointers[0]};
  struct Case {
    std::string name;
    Factory factory;
    std::string args;
  };
  const std::vector<Case> cases = {
      {"LeastAllocated", NewLeastAllocated, "{}"},
      {"MostAllocated", NewMostAllocated, "{}"},
      {"BalancedAllocation", NewBalancedAllocation, "{}"},
      {"RequestedToCapacityRatio", NewRequestedToCapacityRatio,
       R"({"shape": [{"utilization": 0, "score": 0}]})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Registry registry;
    ASSERT_TRUE(registry.Register(c.name, c.factory).ok());
    config::PolicyConfig policy_config;
    policy_config.name = c.name;
    policy_config.weight = 1;
    policy_config.args = std::make_shared<const json>(json::parse(c.args));
    config::ProfileConfig profile_config;
    profile_config.name = "p";
    profile_config.policies = {policy_config};
    StatusOr<std::shared_ptr<const pipeline::Profile>> profile =
        pipeline::Profile::Build(profile_config, registry, "profiles[0]");
    ASSERT_TRUE(profile.ok()) << profile.status().ToString();
    const std::string want = "policy " + c.name +
                             ": prescore: needs the cluster cache (no Kubernetes API connection): "
                             "node \"cold\" has no pod usage";
    pipeline::ScoreScratch scratch;
    std::vector<int64_t> scores;
    EXPECT_EQ((*profile)->RunScorers(pod, pointers, scratch, scores), InternalError(want));
    pipeline::Explanation explanation;
    (*profile)->Explain(pod, pointers, pipeline::ExplainScoring::kAll, explanation);
    EXPECT_EQ(explanation.score_error, want);
    // The same profile scores nodes that have usage.
    EXPECT_TRUE((*profile)->RunScorers(pod, warm, scratch, scores).ok());
    EXPECT_EQ(scores.size(), 1u);
    StatusOr<std::unique_ptr<Policy>> policy = c.factory(json::parse(c.args), {});
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    EXPECT_TRUE((*policy)->AsScorer()->NeedsNodeUsage());
    EXPECT_EQ((*policy)->AsFilter(), nullptr);
    EXPECT_EQ((*policy)->AsPreempter(), nullptr);
  }
}

TEST(AllocationScoresTest, ScoreWithoutPreScoreComputesThePodRequests) {
  // balanced_allocation_test.go "... if PreScore not called": n1 82, n2 95.
  TestArena arena;
  const model::PodInfo pod =
      Pod(arena, {{{"cpu", 1000}, {"memory", 2000}}, {{"cpu", 2000}, {"memory", 3000}}});
  const model::NodeInfo n1 =
      Node(arena, {{"cpu", 10000}, {"memory", 20000}}, {{"cpu", 3000}, {"memory", 0}});
  const model::NodeInfo n2 =
      Node(arena, {{"cpu", 10000}, {"memory", 20000}}, {{"cpu", 3000}, {"memory", 5000}});
  std::unique_ptr<Policy> policy = MustCreate(NewBalancedAllocation, "{}");
  RequestState state;
  EXPECT_EQ(policy->AsScorer()->Score(state, pod, n1), 82);
  EXPECT_EQ(policy->AsScorer()->Score(state, pod, n2), 95);
}

TEST(AllocationScoresTest, EachHasItsName) {
  const std::vector<std::pair<Factory, std::string>> policies = {
      {NewLeastAllocated, "LeastAllocated"},
      {NewMostAllocated, "MostAllocated"},
      {NewBalancedAllocation, "BalancedAllocation"},
  };
  for (const auto& [factory, name] : policies) {
    StatusOr<std::unique_ptr<Policy>> policy = factory(json::object(), {});
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    EXPECT_EQ((*policy)->Name(), name);
  }
  StatusOr<std::unique_ptr<Policy>> ratio = NewRequestedToCapacityRatio(
      json::parse(R"({"shape": [{"utilization": 0, "score": 0}]})"), {});
  ASSERT_TRUE(ratio.ok());
  EXPECT_EQ((*ratio)->Name(), "RequestedToCapacityRatio");
}

TEST(AllocationScoresTest, RejectsInvalidArgsNamingTheField) {
  struct Case {
    std::string name;
    Factory factory;
    std::string args;
    std::string want;
  };
  const std::string p = "profiles[0].policies[2].args";
  const std::vector<Case> cases = {
      {"unknown field", NewLeastAllocated, R"({"ignoredResources": []})",
       p + ".ignoredResources: unknown field (known: resources)"},
      {"shape outside RequestedToCapacityRatio", NewMostAllocated, R"({"shape": []})",
       p + ".shape: unknown field (known: resources)"},
      {"resources not a list", NewLeastAllocated, R"({"resources": {"cpu": 1}})",
       p + ".resources: must be a list"},
      {"resources empty", NewLeastAllocated, R"({"resources": []})",
       p + ".resources: must not be empty (omit it for cpu and memory, weight 1)"},
      {"entry not an object", NewLeastAllocated, R"({"resources": ["cpu"]})",
       p + ".resources[0]: must be an object"},
      {"entry unknown key", NewLeastAllocated, R"({"resources": [{"name": "cpu", "wieght": 2}]})",
       p + ".resources[0].wieght: unknown field (known: name, weight)"},
      {"name missing", NewLeastAllocated, R"({"resources": [{"weight": 2}]})",
       p + ".resources[0].name: required"},
      {"name invalid", NewMostAllocated, R"({"resources": [{"name": "nvidia.com/"}]})",
       p + ".resources[0].name: invalid resource name \"nvidia.com/\": name part must not be "
           "empty"},
      {"pods cannot be scored", NewLeastAllocated, R"({"resources": [{"name": "pods"}]})",
       p + ".resources[0].name: \"pods\" cannot be scored: use cpu, memory, ephemeral-storage, "
           "hugepages-<size> or an extended resource such as example.com/gpu"},
      {"typo cannot be scored", NewLeastAllocated,
       R"({"resources": [{"name": "cpu"}, {"name": "memroy"}]})",
       p + ".resources[1].name: \"memroy\" cannot be scored: use cpu, memory, ephemeral-storage, "
           "hugepages-<size> or an extended resource such as example.com/gpu"},
      {"duplicate", NewLeastAllocated,
       R"({"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "cpu", "weight": 2}]})",
       p + ".resources[2].name: duplicate resource \"cpu\""},
      // least_allocated_test.go "resource with negative weight" / "zero weight" /
      // "resource weight larger than MaxNodeScore": (0, 100].
      {"negative weight", NewLeastAllocated,
       R"({"resources": [{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}]})",
       p + ".resources[0].weight: must be between 1 and 100"},
      {"zero weight", NewMostAllocated,
       R"({"resources": [{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 0}]})",
       p + ".resources[1].weight: must be between 1 and 100"},
      {"weight above 100", NewRequestedToCapacityRatio,
       R"({"resources": [{"name": "memory", "weight": 101}],
           "shape": [{"utilization": 0, "score": 0}]})",
       p + ".resources[0].weight: must be between 1 and 100"},
      {"weight not an integer", NewLeastAllocated,
       R"({"resources": [{"name": "cpu", "weight": 1.5}]})",
       p + ".resources[0].weight: must be an integer"},
      {"balanced weight must be 1", NewBalancedAllocation,
       R"({"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 2}]})",
       p + ".resources[1].weight: must be 1 (BalancedAllocation does not weight resources)"},
      {"shape missing", NewRequestedToCapacityRatio, R"({})", p + ".shape: required"},
      {"shape empty", NewRequestedToCapacityRatio, R"({"shape": []})",
       p + ".shape: must have at least one point"},
      {"shape point unknown key", NewRequestedToCapacityRatio,
       R"({"shape": [{"utilisation": 0, "score": 0}]})",
       p + ".shape[0].utilisation: unknown field (known: utilization, score)"},
      {"utilization missing", NewRequestedToCapacityRatio, R"({"shape": [{"score": 0}]})",
       p + ".shape[0].utilization: required"},
      {"score missing", NewRequestedToCapacityRatio, R"({"shape": [{"utilization": 0}]})",
       p + ".shape[0].score: required"},
      {"utilization above 100", NewRequestedToCapacityRatio,
       R"({"shape": [{"utilization": 0, "score": 0}, {"utilization": 101, "score": 10}]})",
       p + ".shape[1].utilization: must be between 0 and 100"},
      {"score above 10", NewRequestedToCapacityRatio,
       R"({"shape": [{"utilization": 0, "score": 100}]})",
       p + ".shape[0].score: must be between 0 and 10"},
      {"negative score", NewRequestedToCapacityRatio,
       R"({"shape": [{"utilization": 0, "score": -1}]})",
       p + ".shape[0].score: must be between 0 and 10"},
      {"utilization not increasing", NewRequestedToCapacityRatio,
       R"({"shape": [{"utilization": 10, "score": 0}, {"utilization": 50, "score": 5},
                     {"utilization": 50, "score": 10}]})",
       p + ".shape[2].utilization: must be greater than the previous point's (50 <= 50)"},
      {"utilization decreasing", NewRequestedToCapacityRatio,
       R"({"shape": [{"utilization": 60, "score": 0}, {"utilization": 40, "score": 5}]})",
       p + ".shape[1].utilization: must be greater than the previous point's (40 <= 60)"},
  };
  PolicyContext context;
  context.args_path = p;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    StatusOr<std::unique_ptr<Policy>> policy = c.factory(json::parse(c.args), context);
    EXPECT_EQ(policy.status(), InvalidArgumentError(c.want));
  }
}

TEST(AllocationScoresTest, AcceptsEveryScorableResourceKind) {
  const std::string args = R"({"resources": [
      {"name": "cpu", "weight": 100}, {"name": "memory"}, {"name": "ephemeral-storage"},
      {"name": "hugepages-1Gi"}, {"name": "example.com/gpu"}, {"name": "kubernetes.io/x"},
      {"name": "attachable-volumes-csi-x"}]})";
  for (const Factory& factory : {Factory(NewLeastAllocated), Factory(NewMostAllocated)}) {
    StatusOr<std::unique_ptr<Policy>> policy = factory(json::parse(args), {});
    EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  }
}

// Every resource kind, weighted, through the shared code: ephemeral-storage and
// scalars use the plain requests of the node's pods; hugepages are scored like
// extended resources.
TEST(LeastAllocatedTest, ScoresEphemeralStorageAndHugepages) {
  TestArena arena;
  const std::string args = R"({"resources": [{"name": "cpu"},
                                             {"name": "ephemeral-storage", "weight": 2},
                                             {"name": "hugepages-2Mi", "weight": 3}]})";
  const model::PodInfo pod =
      PodBuilder(arena)
          .Container({{"cpu", 100}, {"ephemeral-storage", 100}, {"hugepages-2Mi", 2}})
          .Build();
  const model::NodeInfo node =
      NodeBuilder(arena)
          .Allocatable({{"cpu", 1000}, {"ephemeral-storage", 1000}, {"hugepages-2Mi", 10}})
          .Usage(1, {{"cpu", 100}, {"ephemeral-storage", 300}, {"hugepages-2Mi", 4}},
                 {{"cpu", 400}, {"ephemeral-storage", 999}, {"hugepages-2Mi", 9}})
          .Build();
  StatusOr<std::unique_ptr<Policy>> policy = NewLeastAllocated(json::parse(args), {});
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  // cpu (scoring): (1000 - 500)*100/1000 = 50, weight 1.
  // ephemeral-storage (plain): (1000 - 400)*100/1000 = 60, weight 2.
  // hugepages-2Mi (plain): (10 - 6)*100/10 = 40, weight 3.
  // (50 + 120 + 120)/6 = 48.
  EXPECT_EQ(ScoreNodes(**policy, pod, {node}), std::vector<int64_t>{48});
}


// Amounts near int64's limit: the per-resource a·100/alloc is formed in 64
// bits while it fits and in 128 bits beyond, with the same truncated quotient
// on both sides of the boundary (int64 max = 9223372036854775807).
TEST(AllocationScoresTest, HugeAmountsScoreExactlyOnBothSidesOfTheOverflow) {
  TestArena arena;
  const std::string args = R"({"resources": [{"name": "memory"}]})";
  const model::PodInfo pod = Pod(arena, {{{"memory", 1}}});
  // 92233720368547758 = int64 max / 100: alloc·100 still fits.
  constexpr int64_t kFits = 92233720368547758;
  const std::vector<model::NodeInfo> nodes = {
      // Used 0 + pod 1: least (kFits-1)·100/kFits = 99; most 1·100/kFits = 0.
      Node(arena, {{"memory", kFits}}),
      // kFits+1: (alloc-1)·100 = 9223372036854775800 fits, so 64 bits: 99.
      Node(arena, {{"memory", kFits + 1}}),
      // 2^62 with 2^61-1 used: least 2^61·100/2^62 = 50 (128 bits); most 50.
      Node(arena, {{"memory", int64_t{1} << 62}}, {{"memory", (int64_t{1} << 61) - 1}}),
      // 3e18 with 1e18-1 used: least 2e18·100/3e18 = 66.6 → 66; most 33.3 → 33.
      Node(arena, {{"memory", 3'000'000'000'000'000'000}},
           {{"memory", 999'999'999'999'999'999}}),
      // int64 max, all used but the pod's 1: least (alloc - req)·100/alloc =
      // 0; most alloc·100/alloc = 100 (128 bits).
      Node(arena, {{"memory", std::numeric_limits<int64_t>::max()}},
           {{"memory", std::numeric_limits<int64_t>::max() - 1}}),
  };
  std::unique_ptr<Policy> least = MustCreate(NewLeastAllocated, args);
  std::unique_ptr<Policy> most = MustCreate(NewMostAllocated, args);
  ASSERT_NE(least, nullptr);
  ASSERT_NE(most, nullptr);
  RequestState state;
  std::vector<int64_t> least_raw;
  std::vector<int64_t> most_raw;
  for (const model::NodeInfo& node : nodes) {
    least_raw.push_back(least->AsScorer()->Score(state, pod, node));
    most_raw.push_back(most->AsScorer()->Score(state, pod, node));
  }
  EXPECT_EQ(least_raw, (std::vector<int64_t>{99, 99, 50, 66, 0}));
  EXPECT_EQ(most_raw, (std::vector<int64_t>{0, 0, 50, 33, 100}));
}

}  // namespace
}  // namespace schedext::policy
