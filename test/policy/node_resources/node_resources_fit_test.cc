#include "policy/builtin/node_resources/node_resources_fit.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/policy/policy.h"
#include "testing/model_builders.h"

namespace schedext::policy {
namespace {

using nlohmann::json;
using test::NodeBuilder;
using test::PodBuilder;
using test::ResourceAmounts;
using test::TestArena;

std::unique_ptr<Policy> MustCreate(std::string_view args) {
  StatusOr<std::unique_ptr<Policy>> policy =
      NewNodeResourcesFit(json::parse(args), PolicyContext{});
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return policy.ok() ? std::move(*policy) : nullptr;
}

// fit_test.go's node: makeAllocatableResources(10, 20, 32, 5, 20, 5), i.e.
// 10m cpu, 20 memory, 32 pods, 5 example.com/aaa, 20 ephemeral-storage and
// 5 hugepages-2Mi.
NodeBuilder UpstreamNode(TestArena& arena) {
  NodeBuilder builder(arena);
  builder.Name("n").Allocatable({{"cpu", 10},
                                 {"memory", 20},
                                 {"pods", 32},
                                 {"example.com/aaa", 5},
                                 {"ephemeral-storage", 20},
                                 {"hugepages-2Mi", 5}});
  return builder;
}

struct FitCase {
  std::string name;
  std::string args;
  model::PodInfo pod;
  model::NodeInfo node;
  Verdict want;
};

void RunFitCases(const std::vector<FitCase>& cases) {
  for (const FitCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<Policy> policy = MustCreate(c.args);
    ASSERT_NE(policy, nullptr);
    const FilterHook* filter = policy->AsFilter();
    ASSERT_NE(filter, nullptr);
    RequestState state;
    ASSERT_TRUE(filter->PreFilter(state, c.pod).ok());
    Verdict got = filter->Filter(state, c.pod, c.node);
    EXPECT_EQ(got.code, c.want.code);
    EXPECT_EQ(got.reason, c.want.reason);
  }
}

const Verdict kFits = Verdict::Success();
Verdict Insufficient(std::string_view reason) { return Verdict::Unschedulable(reason); }

// TestEnoughRequests (fit_test.go, 1.29–1.30), case by case. The existing pod
// there (one pod) becomes Usage(1, ...). A check fails when
// request > allocatable - requested, only for resources requested (> 0).
TEST(NodeResourcesFitTest, ReproducesUpstreamTestEnoughRequests) {
  TestArena arena;
  auto node = [&arena](ResourceAmounts requested) {
    return UpstreamNode(arena).Usage(1, requested).Build();
  };
  auto pod = [&arena](ResourceAmounts requests) {
    return PodBuilder(arena).Container(requests).Build();
  };
  const std::vector<FitCase> cases = {
      {"no resources requested always fits", "{}", PodBuilder(arena).Build(),
       node({{"cpu", 10}, {"memory", 20}}), kFits},
      // cpu 1 > 10-10 = 0 (memory 1 > 20-20 too; the first shortfall is the reason).
      {"too many resources fails", "{}", pod({{"cpu", 1}, {"memory", 1}}),
       node({{"cpu", 10}, {"memory", 20}}), Insufficient("Insufficient cpu")},
      // max(1, 3) = 3 > 10-8 = 2; memory max(1, 1) = 1 <= 20-19.
      {"too many resources fails due to init container cpu", "{}",
       PodBuilder(arena)
           .Container({{"cpu", 1}, {"memory", 1}})
           .InitContainer({{"cpu", 3}, {"memory", 1}})
           .Build(),
       node({{"cpu", 8}, {"memory", 19}}), Insufficient("Insufficient cpu")},
      // max(1, 3, 2) = 3 > 2.
      {"too many resources fails due to highest init container cpu", "{}",
       PodBuilder(arena)
           .Container({{"cpu", 1}, {"memory", 1}})
           .InitContainer({{"cpu", 3}, {"memory", 1}})
           .InitContainer({{"cpu", 2}, {"memory", 1}})
           .Build(),
       node({{"cpu", 8}, {"memory", 19}}), Insufficient("Insufficient cpu")},
      // cpu 1 <= 10-9; memory max(1, 3) = 3 > 20-19 = 1.
      {"too many resources fails due to init container memory", "{}",
       PodBuilder(arena)
           .Container({{"cpu", 1}, {"memory", 1}})
           .InitContainer({{"cpu", 1}, {"memory", 3}})
           .Build(),
       node({{"cpu", 9}, {"memory", 19}}), Insufficient("Insufficient memory")},
      // max, not sum: cpu 1 <= 1, memory 1 <= 1.
      {"init container fits because it's the max, not sum, of containers and init containers", "{}",
       PodBuilder(arena)
           .Container({{"cpu", 1}, {"memory", 1}})
           .InitContainer({{"cpu", 1}, {"memory", 1}})
           .Build(),
       node({{"cpu", 9}, {"memory", 19}}), kFits},
      {"both resources fit", "{}", pod({{"cpu", 1}, {"memory", 1}}),
       node({{"cpu", 5}, {"memory", 5}}), kFits},
      // cpu 2 > 10-9 = 1; memory 1 <= 15.
      {"one resource memory fits", "{}", pod({{"cpu", 2}, {"memory", 1}}),
       node({{"cpu", 9}, {"memory", 5}}), Insufficient("Insufficient cpu")},
      // memory 2 > 20-19 = 1.
      {"one resource cpu fits", "{}", pod({{"cpu", 1}, {"memory", 2}}),
       node({{"cpu", 5}, {"memory", 19}}), Insufficient("Insufficient memory")},
      // 5 > 10-5 is false and 1 > 20-19 is false: equality fits.
      {"equal edge case", "{}", pod({{"cpu", 5}, {"memory", 1}}),
       node({{"cpu", 5}, {"memory", 19}}), kFits},
      {"extended resource fits", "{}", pod({{"example.com/aaa", 1}}), node({}), kFits},
      // 10 > 5 - 0.
      {"extended resource capacity enforced", "{}",
       pod({{"cpu", 1}, {"memory", 1}, {"example.com/aaa", 10}}), node({{"example.com/aaa", 0}}),
       Insufficient("Insufficient example.com/aaa")},
      // 1 > 5 - 5.
      {"extended resource allocatable enforced", "{}",
       pod({{"cpu", 1}, {"memory", 1}, {"example.com/aaa", 1}}), node({{"example.com/aaa", 5}}),
       Insufficient("Insufficient example.com/aaa")},
      // 3 + 3 = 6 > 5 - 2.
      {"extended resource allocatable enforced for multiple containers", "{}",
       PodBuilder(arena)
           .Container({{"cpu", 1}, {"memory", 1}, {"example.com/aaa", 3}})
           .Container({{"cpu", 1}, {"memory", 1}, {"example.com/aaa", 3}})
           .Build(),
       node({{"example.com/aaa", 2}}), Insufficient("Insufficient example.com/aaa")},
      // max(3, 3) = 3 <= 5 - 2.
      {"extended resource allocatable admits multiple init containers", "{}",
       PodBuilder(arena)
           .InitContainer({{"cpu", 1}, {"memory", 1}, {"example.com/aaa", 3}})
           .InitContainer({{"cpu", 1}, {"memory", 1}, {"example.com/aaa", 3}})
           .Build(),
       node({{"example.com/aaa", 2}}), kFits},
      // Absent from allocatable counts as 0: 1 > 0 - 0.
      {"extended resource allocatable enforced for unknown resource", "{}",
       pod({{"cpu", 1}, {"memory", 1}, {"example.com/bbb", 1}}), node({}),
       Insufficient("Insufficient example.com/bbb")},
      {"kubernetes.io resource capacity enforced", "{}",
       pod({{"cpu", 1}, {"memory", 1}, {"kubernetes.io/something", 10}}), node({}),
       Insufficient("Insufficient kubernetes.io/something")},
      // 10 > 5 - 0.
      {"hugepages resource capacity enforced", "{}",
       pod({{"cpu", 1}, {"memory", 1}, {"hugepages-2Mi", 10}}), node({{"hugepages-2Mi", 0}}),
       Insufficient("Insufficient hugepages-2Mi")},
      // 3 + 3 = 6 > 5 - 2.
      {"hugepages resource allocatable enforced for multiple containers", "{}",
       PodBuilder(arena)
           .Container({{"cpu", 1}, {"memory", 1}, {"hugepages-2Mi", 3}})
           .Container({{"cpu", 1}, {"memory", 1}, {"hugepages-2Mi", 3}})
           .Build(),
       node({{"hugepages-2Mi", 2}}), Insufficient("Insufficient hugepages-2Mi")},
      {"skip checking ignored extended resource", R"({"ignoredResources": ["example.com/bbb"]})",
       pod({{"cpu", 1}, {"memory", 1}, {"example.com/bbb", 1}}), node({}), kFits},
      // cpu 1 + 3 = 4 <= 10-5; memory 1 + 13 = 14 <= 20-5.
      {"resources + pod overhead fits", "{}",
       PodBuilder(arena)
           .Container({{"cpu", 1}, {"memory", 1}})
           .Overhead("cpu", 3)
           .Overhead("memory", 13)
           .Build(),
       node({{"cpu", 5}, {"memory", 5}}), kFits},
      // memory 1 + 15 = 16 > 20-5 = 15.
      {"requests + overhead does not fit for memory", "{}",
       PodBuilder(arena)
           .Container({{"cpu", 1}, {"memory", 1}})
           .Overhead("cpu", 1)
           .Overhead("memory", 15)
           .Build(),
       node({{"cpu", 5}, {"memory", 5}}), Insufficient("Insufficient memory")},
      // example.com/bbb is skipped by its group; kubernetes.io names never are.
      {"skip checking ignored extended resource via resource groups",
       R"({"ignoredResourceGroups": ["example.com"]})",
       pod({{"cpu", 1}, {"memory", 1}, {"example.com/bbb", 1}, {"kubernetes.io/something", 1}}),
       node({}), Insufficient("Insufficient kubernetes.io/something")},
      // A zero request is not checked, although 0 > 5-6 would hold.
      {"skip checking extended resource request with quantity zero via resource groups", "{}",
       pod({{"cpu", 1}, {"memory", 1}, {"example.com/aaa", 0}}), node({{"example.com/aaa", 6}}),
       kFits},
      // No cpu or memory requested: the overcommitted cpu (20 > 10) is not checked.
      {"skip checking resource request with quantity zero", "{}", pod({{"example.com/aaa", 1}}),
       node({{"cpu", 20}, {"memory", 30}, {"example.com/aaa", 1}}), kFits},
  };
  RunFitCases(cases);
}

// TestStorageRequests and TestNotEnoughRequests (fit_test.go).
TEST(NodeResourcesFitTest, ReproducesUpstreamStorageAndPodCountCases) {
  TestArena arena;
  auto pod = [&arena](ResourceAmounts requests) {
    return PodBuilder(arena).Container(requests).Build();
  };
  // TestNotEnoughRequests' node allows one pod and already runs one.
  auto full = [&arena](ResourceAmounts requested) {
    return NodeBuilder(arena)
        .Name("full")
        .Allocatable({{"cpu", 10}, {"memory", 20}, {"pods", 1}})
        .Usage(1, requested)
        .Build();
  };
  const std::vector<FitCase> cases = {
      {"empty storage requested, and pod fits", "{}", pod({{"cpu", 1}, {"memory", 1}}),
       UpstreamNode(arena).Usage(1, {{"cpu", 2}, {"memory", 10}}).Build(), kFits},
      // 25 > 20 - 0.
      {"storage ephemeral local storage request exceeds allocatable", "{}",
       pod({{"ephemeral-storage", 25}}),
       UpstreamNode(arena).Usage(1, {{"cpu", 2}, {"memory", 2}}).Build(),
       Insufficient("Insufficient ephemeral-storage")},
      // 5 <= 20 - 10.
      {"ephemeral local storage is sufficient", "{}", pod({{"ephemeral-storage", 5}}),
       UpstreamNode(arena).Usage(1, {{"cpu", 2}, {"memory", 2}, {"ephemeral-storage", 10}}).Build(),
       kFits},
      {"pod fits", "{}", pod({{"ephemeral-storage", 10}}),
       UpstreamNode(arena).Usage(1, {{"cpu", 2}, {"memory", 2}}).Build(), kFits},
      // 1 + 1 > 1 pod, whatever the pod requests.
      {"even without specified resources, predicate fails when there's no space for additional "
       "pod",
       "{}", PodBuilder(arena).Build(), full({{"cpu", 10}, {"memory", 20}}),
       Insufficient("Too many pods")},
      {"even if both resources fit, predicate fails when there's no space for additional pod", "{}",
       pod({{"cpu", 1}, {"memory", 1}}), full({{"cpu", 5}, {"memory", 5}}),
       Insufficient("Too many pods")},
      {"even for equal edge case, predicate fails when there's no space for additional pod", "{}",
       pod({{"cpu", 5}, {"memory", 1}}), full({{"cpu", 5}, {"memory", 19}}),
       Insufficient("Too many pods")},
      // Not upstream: the pod count is checked before cpu (both fail here).
      {"pod count comes first", "{}", pod({{"cpu", 6}}), full({{"cpu", 5}}),
       Insufficient("Too many pods")},
      // Not upstream: 31 pods + 1 <= 32 fits; no allocatable pods at all does not.
      {"room for one more pod", "{}", PodBuilder(arena).Build(),
       UpstreamNode(arena).Usage(31, {}).Build(), kFits},
      {"no allocatable pods", "{}", PodBuilder(arena).Build(),
       NodeBuilder(arena).Name("bare").Usage(0, {}).Build(), Insufficient("Too many pods")},
  };
  RunFitCases(cases);
}

// Which resource is reported when several fall short: kube-scheduler's order
// (pods, cpu, memory, ephemeral-storage, then the pod's scalar resources).
TEST(NodeResourcesFitTest, ReportsTheFirstShortfallInUpstreamOrder) {
  TestArena arena;
  const model::NodeInfo node = UpstreamNode(arena).Usage(1, {}).Build();
  auto pod = [&arena](ResourceAmounts requests) {
    return PodBuilder(arena).Container(requests).Build();
  };
  const std::vector<FitCase> cases = {
      {"memory before ephemeral-storage", "{}", pod({{"ephemeral-storage", 21}, {"memory", 21}}),
       node, Insufficient("Insufficient memory")},
      {"ephemeral-storage before scalars", "{}",
       pod({{"hugepages-2Mi", 6}, {"ephemeral-storage", 21}}), node,
       Insufficient("Insufficient ephemeral-storage")},
      {"scalars in the pod's order", "{}", pod({{"example.com/zzz", 1}, {"example.com/aaa", 6}}),
       node, Insufficient("Insufficient example.com/zzz")},
      {"an ignored scalar lets the next one report", R"({"ignoredResources": ["example.com/zzz"]})",
       pod({{"example.com/zzz", 1}, {"example.com/aaa", 6}}), node,
       Insufficient("Insufficient example.com/aaa")},
      // hugepages are not extended resources, so a group cannot hide them.
      {"hugepages are never ignored", R"({"ignoredResourceGroups": ["example.com"]})",
       pod({{"example.com/aaa", 6}, {"hugepages-2Mi", 6}}), node,
       Insufficient("Insufficient hugepages-2Mi")},
      {"several groups", R"({"ignoredResourceGroups": ["example.org", "example.com"]})",
       pod({{"example.com/aaa", 6}, {"example.org/x", 1}}), node, kFits},
  };
  RunFitCases(cases);
}

TEST(NodeResourcesFitTest, ChecksEveryNodeAgainstOnePreFilter) {
  TestArena arena;
  const model::PodInfo pod =
      PodBuilder(arena).Container({{"cpu", 500}, {"example.com/gpu", 1}}).Build();
  std::unique_ptr<Policy> policy = MustCreate("{}");
  ASSERT_NE(policy, nullptr);
  const FilterHook* filter = policy->AsFilter();
  RequestState state;
  ASSERT_TRUE(filter->PreFilter(state, pod).ok());
  const model::NodeInfo roomy =
      NodeBuilder(arena)
          .Allocatable({{"cpu", 1000}, {"pods", 110}, {"example.com/gpu", 2}})
          .Usage(3, {{"cpu", 500}, {"example.com/gpu", 1}})
          .Build();
  const model::NodeInfo busy =
      NodeBuilder(arena)
          .Allocatable({{"cpu", 1000}, {"pods", 110}, {"example.com/gpu", 2}})
          .Usage(3, {{"cpu", 501}})
          .Build();
  const model::NodeInfo no_gpu =
      NodeBuilder(arena).Allocatable({{"cpu", 1000}, {"pods", 110}}).Usage(0, {}).Build();
  EXPECT_TRUE(filter->Filter(state, pod, roomy).ok());
  EXPECT_EQ(filter->Filter(state, pod, busy).reason, "Insufficient cpu");
  Verdict got = filter->Filter(state, pod, no_gpu);
  EXPECT_EQ(got.code, Verdict::Code::kUnschedulable);
  EXPECT_EQ(got.reason, "Insufficient example.com/gpu");
}

// Pod-level requests (PodLevelResources) as kube-scheduler's fit counts them:
// the pod level replaces the containers' cpu / memory / hugepages, overhead
// comes on top, and a node's usage holds what its pods count the same way.
TEST(NodeResourcesFitTest, CountsPodLevelRequestsAsKubeSchedulerDoes) {
  TestArena arena;
  auto node = [&arena](ResourceAmounts requested) {
    return UpstreamNode(arena).Usage(1, requested).Build();
  };
  const std::vector<FitCase> cases = {
      // containers ask 1m, the pod 3m: 3 > 10-8.
      {"pod-level cpu above the free cpu fails although the container fits", "{}",
       PodBuilder(arena).Container({{"cpu", 1}}).PodLevel({{"cpu", 3}}).Build(),
       node({{"cpu", 8}}), Insufficient("Insufficient cpu")},
      {"pod-level cpu exactly the free cpu fits", "{}",
       PodBuilder(arena).Container({{"cpu", 1}}).PodLevel({{"cpu", 2}}).Build(),
       node({{"cpu", 8}}), kFits},
      // the init container's 5m gives way to the pod level's 2m.
      {"pod level below an init container's need replaces it", "{}",
       PodBuilder(arena)
           .Container({{"cpu", 1}})
           .InitContainer({{"cpu", 5}})
           .PodLevel({{"cpu", 2}})
           .Build(),
       node({{"cpu", 8}}), kFits},
      // memory 1 from the container, pod-level 15 > 20-10.
      {"pod-level memory only", "{}",
       PodBuilder(arena).Container({{"cpu", 1}, {"memory", 1}}).PodLevel({{"memory", 15}}).Build(),
       node({{"memory", 10}}), Insufficient("Insufficient memory")},
      // 2 + overhead 1 = 3 > 10-8.
      {"overhead comes on top of the pod level", "{}",
       PodBuilder(arena).Container({{"cpu", 1}}).PodLevel({{"cpu", 2}}).Overhead("cpu", 1).Build(),
       node({{"cpu", 8}}), Insufficient("Insufficient cpu")},
      {"pod-level hugepages", "{}",
       PodBuilder(arena).Container({{"hugepages-2Mi", 1}}).PodLevel({{"hugepages-2Mi", 6}}).Build(),
       node({}), Insufficient("Insufficient hugepages-2Mi")},
      // limits alone change nothing: 1 <= 10-8.
      {"pod-level limits alone", "{}",
       PodBuilder(arena).Container({{"cpu", 1}}).PodLevel({}, {{"cpu", 9}}).Build(),
       node({{"cpu", 8}}), kFits},
      // The pod on the node asks 1m in its container and 8m as a pod: 3 > 10-8.
      {"a pod-level pod on the node counts its pod level", "{}",
       PodBuilder(arena).Container({{"cpu", 3}}).Build(),
       UpstreamNode(arena)
           .UsageOf(std::vector<model::PodInfo>{
               PodBuilder(arena).Container({{"cpu", 1}}).PodLevel({{"cpu", 8}}).Build()})
           .Build(),
       Insufficient("Insufficient cpu")},
  };
  RunFitCases(cases);
}

TEST(NodeResourcesFitTest, NeedsTheClusterCache) {
  TestArena arena;
  const model::PodInfo pod = PodBuilder(arena).Container({{"cpu", 1}}).Build();
  const model::NodeInfo node = NodeBuilder(arena).Name("n").Allocatable({{"cpu", 10}}).Build();
  std::unique_ptr<Policy> policy = MustCreate("{}");
  ASSERT_NE(policy, nullptr);
  RequestState state;
  ASSERT_TRUE(policy->AsFilter()->PreFilter(state, pod).ok());
  Verdict got = policy->AsFilter()->Filter(state, pod, node);
  EXPECT_EQ(got.code, Verdict::Code::kError);
  EXPECT_EQ(got.reason, "NodeResourcesFit needs the cluster cache (no Kubernetes API connection)");

  std::vector<model::PodInfo> victims = {pod};
  std::vector<uint8_t> needed = {1};
  got = policy->AsPreempter()->SelectVictims(state, pod, node, victims, needed);
  EXPECT_EQ(got.code, Verdict::Code::kError);
  EXPECT_EQ(got.reason, "NodeResourcesFit needs the cluster cache (no Kubernetes API connection)");
}

// TestPreFilterDisabled: Filter without PreFilter is an error.
TEST(NodeResourcesFitTest, FilterWithoutPreFilterIsAnError) {
  TestArena arena;
  const model::PodInfo pod = PodBuilder(arena).Build();
  const model::NodeInfo node = UpstreamNode(arena).Usage(0, {}).Build();
  std::unique_ptr<Policy> policy = MustCreate("{}");
  ASSERT_NE(policy, nullptr);
  RequestState state;
  EXPECT_EQ(policy->AsFilter()->Filter(state, pod, node).code, Verdict::Code::kError);
}

TEST(NodeResourcesFitTest, IsAFilterThatEvictionCanHelpWithAPreemptHook) {
  std::unique_ptr<Policy> policy = MustCreate("{}");
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(policy->Name(), "NodeResourcesFit");
  ASSERT_NE(policy->AsFilter(), nullptr);
  EXPECT_TRUE(policy->AsFilter()->EvictionCanHelp());
  EXPECT_NE(policy->AsPreempter(), nullptr);
  EXPECT_EQ(policy->AsScorer(), nullptr);
}

// A victim pod requesting `requests`.
model::PodInfo Victim(TestArena& arena, std::string_view name, ResourceAmounts requests) {
  return PodBuilder(arena).Name(name).Container(requests).Build();
}

TEST(NodeResourcesFitTest, PreemptKeepsOnlyTheLeastImportantVictimsNeeded) {
  struct Case {
    std::string name;
    std::string args;
    model::PodInfo preemptor;
    model::NodeInfo node;
    std::vector<model::PodInfo> victims;  // most important first
    std::vector<uint8_t> needed_before;   // empty: all 1
    Verdict want;
    std::vector<uint8_t> want_needed;
  };
  TestArena arena;
  const model::PodInfo v1000a = Victim(arena, "a", {{"cpu", 1000}});
  const model::PodInfo v1000b = Victim(arena, "b", {{"cpu", 1000}});
  const model::PodInfo v1000c = Victim(arena, "c", {{"cpu", 1000}});
  const model::PodInfo v2000 = Victim(arena, "big", {{"cpu", 2000}});
  const model::PodInfo v500a = Victim(arena, "d", {{"cpu", 500}});
  const model::PodInfo v500b = Victim(arena, "e", {{"cpu", 500}});
  const model::PodInfo gpu_a = Victim(arena, "g1", {{"example.com/gpu", 1}});
  const model::PodInfo gpu_b = Victim(arena, "g2", {{"example.com/gpu", 1}});
  const model::PodInfo no_gpu = Victim(arena, "g0", {{"cpu", 10}});
  auto preemptor = [&arena](ResourceAmounts requests) {
    return PodBuilder(arena).Name("preemptor").Container(requests).Build();
  };
  // 4000m cpu; the three 1000m victims plus a 500m pod that is not a victim.
  const model::NodeInfo node = NodeBuilder(arena)
                                   .Name("n")
                                   .Allocatable({{"cpu", 4000}, {"pods", 10}})
                                   .Usage(4, {{"cpu", 3500}})
                                   .Build();
  const std::vector<Case> cases = {
      // Evicting all: 4000 - 3500 + 3000 = 3500 < 4000.
      {"drop: does not fit even after evicting every victim",
       "{}",
       preemptor({{"cpu", 4000}}),
       node,
       {v1000a, v1000b, v1000c},
       {},
       Insufficient("Insufficient cpu"),
       {1, 1, 1}},
      // All out: 3500 free, fits. Reprieving a: 2500 < 3500, needed; b, c likewise.
      {"keep all",
       "{}",
       preemptor({{"cpu", 3500}}),
       node,
       {v1000a, v1000b, v1000c},
       {},
       kFits,
       {1, 1, 1}},
      // Reprieve a: free 500 + 2000 = 2500 >= 1500, a stays. b: 500 + 1000 >= 1500,
      // b stays. c: 500 < 1500, c goes: the least important is evicted.
      {"reprieve from the most important down",
       "{}",
       preemptor({{"cpu", 1500}}),
       node,
       {v1000a, v1000b, v1000c},
       {},
       kFits,
       {0, 0, 1}},
      // Greedy, as kube-scheduler's reprieve is: big stays (d, e out: 500 + 1000 =
      // 1500 >= 1000 free), d stays (e out: 500 + 500 = 1000 >= 1000), e goes (500 < 1000).
      {"greedy in importance order",
       "{}",
       preemptor({{"cpu", 1000}}),
       NodeBuilder(arena)
           .Allocatable({{"cpu", 4000}, {"pods", 10}})
           .Usage(4, {{"cpu", 3500}})
           .Build(),
       {v2000, v500a, v500b},
       {},
       kFits,
       {0, 0, 1}},
      // big is needed (d, e out: 500 + 1000 = 1500 < 2500); then d stays (big, e out:
      // 500 + 2500 = 3000 >= 2500) and e stays (big out: 500 + 2000 = 2500 >= 2500).
      {"a large victim is needed, small ones reprieved",
       "{}",
       preemptor({{"cpu", 2500}}),
       NodeBuilder(arena)
           .Allocatable({{"cpu", 4000}, {"pods", 10}})
           .Usage(4, {{"cpu", 3500}})
           .Build(),
       {v2000, v500a, v500b},
       {},
       kFits,
       {1, 0, 0}},
      // Pods limit 3, all three pods are victims, the preemptor requests nothing:
      // reprieve a: 3 - 2 + 1 = 2 <= 3; b: 3 - 1 + 1 = 3 <= 3; c: 4 > 3, needed.
      {"pod count",
       "{}",
       PodBuilder(arena).Name("preemptor").Build(),
       NodeBuilder(arena)
           .Allocatable({{"cpu", 4000}, {"pods", 3}})
           .Usage(3, {{"cpu", 3000}})
           .Build(),
       {v1000a, v1000b, v1000c},
       {},
       kFits,
       {0, 0, 1}},
      {"pod count drop",
       "{}",
       PodBuilder(arena).Name("preemptor").Build(),
       NodeBuilder(arena).Allocatable({{"cpu", 4000}, {"pods", 3}}).Usage(5, {}).Build(),
       {v1000a},
       {},
       Insufficient("Too many pods"),
       {1}},
      // gpu 2 of 2 used by g1, g2. g1 stays (g2 gone frees 1); g2 is then needed;
      // g0 holds no gpu and stays.
      {"extended resource",
       "{}",
       preemptor({{"example.com/gpu", 1}}),
       NodeBuilder(arena)
           .Allocatable({{"cpu", 4000}, {"pods", 10}, {"example.com/gpu", 2}})
           .Usage(3, {{"cpu", 10}, {"example.com/gpu", 2}})
           .Build(),
       {gpu_a, no_gpu, gpu_b},
       {},
       kFits,
       {0, 0, 1}},
      // Without a PreFilter the scalar reason is generic (it must outlive the call).
      {"extended resource drop",
       "{}",
       preemptor({{"example.com/gpu", 3}}),
       NodeBuilder(arena)
           .Allocatable({{"cpu", 4000}, {"pods", 10}, {"example.com/gpu", 2}})
           .Usage(2, {{"example.com/gpu", 2}})
           .Build(),
       {gpu_a, gpu_b},
       {},
       Insufficient("Insufficient hugepages or extended resources, even after preemption"),
       {1, 1}},
      {"ignored extended resource never needs a victim",
       R"({"ignoredResources": ["example.com/gpu"]})",
       preemptor({{"example.com/gpu", 3}}),
       NodeBuilder(arena)
           .Allocatable({{"cpu", 4000}, {"pods", 10}, {"example.com/gpu", 2}})
           .Usage(2, {{"example.com/gpu", 2}})
           .Build(),
       {gpu_a, gpu_b},
       {},
       kFits,
       {0, 0}},
      // A victim an earlier hook already cleared stays on the node: with only b
      // and c evicted there are 500 + 2000 = 2500 < 3000 free.
      {"victims cleared before count as staying",
       "{}",
       preemptor({{"cpu", 3000}}),
       node,
       {v1000a, v1000b, v1000c},
       {0, 1, 1},
       Insufficient("Insufficient cpu"),
       {0, 1, 1}},
      {"victims cleared before, the rest reprieved",
       "{}",
       preemptor({{"cpu", 1500}}),
       node,
       {v1000a, v1000b, v1000c},
       {0, 1, 1},
       kFits,
       {0, 0, 1}},
      {"no victims, fits", "{}", preemptor({{"cpu", 500}}), node, {}, {}, kFits, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<Policy> policy = MustCreate(c.args);
    ASSERT_NE(policy, nullptr);
    const PreemptHook* preempter = policy->AsPreempter();
    ASSERT_NE(preempter, nullptr);
    // As the pipeline does: no PreFilter for filters that eviction can help.
    RequestState state;
    std::vector<uint8_t> needed = c.needed_before;
    if (needed.empty()) {
      needed.assign(c.victims.size(), 1);
    }
    Verdict got = preempter->SelectVictims(state, c.preemptor, c.node, c.victims, needed);
    EXPECT_EQ(got.code, c.want.code);
    EXPECT_EQ(got.reason, c.want.reason);
    EXPECT_EQ(needed, c.want_needed);
  }
}

TEST(NodeResourcesFitTest, PreemptUsesThePreFilterReasonsWhenPresent) {
  TestArena arena;
  const model::PodInfo preemptor = PodBuilder(arena).Container({{"example.com/gpu", 3}}).Build();
  const model::NodeInfo node = NodeBuilder(arena)
                                   .Allocatable({{"pods", 10}, {"example.com/gpu", 2}})
                                   .Usage(1, {{"example.com/gpu", 1}})
                                   .Build();
  std::vector<model::PodInfo> victims = {Victim(arena, "g", {{"example.com/gpu", 1}})};
  std::vector<uint8_t> needed = {1};
  std::unique_ptr<Policy> policy = MustCreate("{}");
  ASSERT_NE(policy, nullptr);
  RequestState state;
  ASSERT_TRUE(policy->AsFilter()->PreFilter(state, preemptor).ok());
  Verdict got = policy->AsPreempter()->SelectVictims(state, preemptor, node, victims, needed);
  EXPECT_EQ(got.code, Verdict::Code::kUnschedulable);
  EXPECT_EQ(got.reason, "Insufficient example.com/gpu");
}

TEST(NodeResourcesFitTest, PreemptRejectsMismatchedNeeded) {
  TestArena arena;
  const model::PodInfo preemptor = PodBuilder(arena).Build();
  const model::NodeInfo node = UpstreamNode(arena).Usage(0, {}).Build();
  std::vector<model::PodInfo> victims = {preemptor, preemptor};
  std::vector<uint8_t> needed = {1};
  std::unique_ptr<Policy> policy = MustCreate("{}");
  ASSERT_NE(policy, nullptr);
  RequestState state;
  EXPECT_EQ(policy->AsPreempter()->SelectVictims(state, preemptor, node, victims, needed).code,
            Verdict::Code::kError);
}

TEST(NodeResourcesFitTest, RejectsInvalidArgsNamingTheField) {
  struct Case {
    std::string name;
    std::string args;
    std::string want;
  };
  const std::string p = "profiles[0].policies[1].args";
  const std::vector<Case> cases = {
      {"not an object", R"([])", p + ": must be an object"},
      {"scoring field", R"({"resources": []})",
       p + ".resources: unknown field (known: ignoredResources, ignoredResourceGroups)"},
      {"ignoredResources not a list", R"({"ignoredResources": "example.com/gpu"})",
       p + ".ignoredResources: must be a list"},
      {"ignoredResources entry not a string", R"({"ignoredResources": ["example.com/a", 1]})",
       p + ".ignoredResources[1]: must be a string"},
      {"ignoredResources invalid name", R"({"ignoredResources": ["example.com/a b"]})",
       p + ".ignoredResources[0]: invalid resource name \"example.com/a b\": may contain only "
           "alphanumerics, '-', '_' and '.'"},
      {"ignoredResources hugepages", R"({"ignoredResources": ["hugepages-2Mi"]})",
       p + ".ignoredResources[0]: \"hugepages-2Mi\" is not an extended resource (a prefixed "
           "name outside kubernetes.io); only extended resources can be ignored"},
      {"ignoredResources kubernetes.io", R"({"ignoredResources": ["kubernetes.io/x"]})",
       p + ".ignoredResources[0]: \"kubernetes.io/x\" is not an extended resource (a prefixed "
           "name outside kubernetes.io); only extended resources can be ignored"},
      {"ignoredResources cpu", R"({"ignoredResources": ["cpu"]})",
       p + ".ignoredResources[0]: \"cpu\" is not an extended resource (a prefixed name outside "
           "kubernetes.io); only extended resources can be ignored"},
      {"group with a slash", R"({"ignoredResourceGroups": ["example.com/gpu"]})",
       p + ".ignoredResourceGroups[0]: must not contain '/': a group is the prefix of extended "
           "resource names (\"example.com\" for example.com/gpu)"},
      {"group kubernetes.io", R"({"ignoredResourceGroups": ["example.com", "kubernetes.io"]})",
       p + ".ignoredResourceGroups[1]: \"kubernetes.io\" cannot match an extended resource "
           "(kubernetes.io names are never ignored)"},
      {"group empty", R"({"ignoredResourceGroups": [""]})",
       p + ".ignoredResourceGroups[0]: invalid resource group \"\": must not be empty"},
  };
  PolicyContext context;
  context.args_path = p;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    StatusOr<std::unique_ptr<Policy>> policy = NewNodeResourcesFit(json::parse(c.args), context);
    EXPECT_EQ(policy.status(), InvalidArgumentError(c.want));
  }
}

TEST(NodeResourcesFitTest, AcceptsNullAndEmptyArgs) {
  for (const char* args :
       {"null", "{}", R"({"ignoredResources": [], "ignoredResourceGroups": null})"}) {
    SCOPED_TRACE(args);
    EXPECT_NE(MustCreate(args), nullptr);
  }
}

// kube-scheduler's reasons name the resource only (its event counts nodes per
// text); Detail, for explain, has the node's amounts of the first shortfall.
TEST(NodeResourcesFitTest, DetailHasTheAmountsTheReasonLeavesOut) {
  TestArena arena;
  std::unique_ptr<Policy> policy = MustCreate("{}");
  ASSERT_NE(policy, nullptr);
  const FilterHook* filter = policy->AsFilter();
  const model::PodInfo pod =
      PodBuilder(arena).Container({{"cpu", 4}, {"memory", 6}, {"example.com/aaa", 2}}).Build();
  RequestState state;
  ASSERT_TRUE(filter->PreFilter(state, pod).ok());
  struct Case {
    std::string name;
    model::NodeInfo node;
    std::string_view want_reason;
    std::string want_detail;
  };
  const std::vector<Case> cases = {
      {"cpu, 3 free", UpstreamNode(arena).Usage(1, {{"cpu", 7}}).Build(), "Insufficient cpu",
       "cpu: requested 4m, free 3m of 10m allocatable, short by 1m"},
      {"cpu, 1 free", UpstreamNode(arena).Usage(1, {{"cpu", 9}}).Build(), "Insufficient cpu",
       "cpu: requested 4m, free 1m of 10m allocatable, short by 3m"},
      {"memory", UpstreamNode(arena).Usage(1, {{"memory", 15}}).Build(), "Insufficient memory",
       "memory: requested 6, free 5 of 20 allocatable, short by 1"},
      {"extended", UpstreamNode(arena).Usage(1, {{"example.com/aaa", 4}}).Build(),
       "Insufficient example.com/aaa", "example.com/aaa: requested 2, free 1 of 5 allocatable, short by 1"},
      {"pods", UpstreamNode(arena).Usage(32, {}).Build(), "Too many pods",
       "pods: 32 of 32 allowed"},
      {"fits", UpstreamNode(arena).Usage(1, {}).Build(), "", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(filter->Filter(state, pod, c.node).reason, c.want_reason);
    EXPECT_EQ(filter->Detail(state, pod, c.node), c.want_detail);
  }
}

}  // namespace
}  // namespace schedext::policy
