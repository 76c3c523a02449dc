// The resource policies' shared node summary (resource_summary.h) on nodes
// stored by a real ClusterCache built with the PolicyHost's summaries: every
// answer (filter verdicts and reasons, the four scorers, preemption's victim
// selection) must equal the answer on the same node with its summary
// invalidated, i.e. computed from node.allocatable and node.usage; the
// summary must follow the pod events that change a node's usage.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/cluster/cache.h"
#include "schedext/model/name_table.h"
#include "schedext/model/owned.h"
#include "schedext/policy/policy.h"
#include "schedext/policy/policy_host.h"
#include "schedext/policy/registry.h"
#include "schedext/policy/request_state.h"
#include "testing/model_builders.h"

namespace schedext::policy {
namespace {

using nlohmann::json;
using test::NodeBuilder;
using test::PodBuilder;
using test::ResourceAmounts;
using test::TestArena;

constexpr int64_t kGi = int64_t{1} << 30;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr std::string_view kGpu = "example.com/gpu";

// A bound or pending pod as the informer hands it to the cache.
cluster::InformerObject PodObject(std::string_view name, std::string_view node,
                                  ResourceAmounts requests) {
  TestArena arena;
  PodBuilder builder(arena);
  builder.Name(name).Namespace("default").Uid("uid-" + std::string(name)).Phase("Running");
  if (!node.empty()) {
    builder.NodeName(node);
  }
  builder.Container(requests);
  return {nullptr, std::make_shared<const model::OwnedPod>(builder.Build()), nullptr};
}

cluster::InformerObject NodeObject(std::string_view name, ResourceAmounts allocatable) {
  TestArena arena;
  model::NodeInfo node = NodeBuilder(arena).Name(name).Allocatable(allocatable).Build();
  node.usage = nullptr;
  return {std::make_shared<const model::OwnedNode>(node), nullptr, nullptr};
}

// Every resource policy built into one PolicyHost (as main builds the
// profiles), then a cache that writes the host's summaries.
class NodeResourcesSummaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinPolicies(registry_).ok());
    const json with_scalars = {{"resources",
                                {{{"name", "cpu"}, {"weight", 2}},
                                 {{"name", "memory"}, {"weight", 1}},
                                 {{"name", "ephemeral-storage"}, {"weight", 1}},
                                 {{"name", kGpu}, {"weight", 3}}}}};
    const json shape = {
        {"shape", {{{"utilization", 0}, {"score", 10}}, {{"utilization", 100}, {"score", 0}}}}};
    json ratio_with_scalars = with_scalars;
    ratio_with_scalars["shape"] = shape["shape"];
    const json balanced_three = {{"resources",
                                  {{{"name", "cpu"}, {"weight", 1}},
                                   {{"name", "memory"}, {"weight", 1}},
                                   {{"name", "ephemeral-storage"}, {"weight", 1}}}}};
    Add("NodeResourcesFit", json::object());
    Add("LeastAllocated", json::object());
    Add("MostAllocated", json::object());
    Add("BalancedAllocation", json::object());
    Add("RequestedToCapacityRatio", shape);
    Add("LeastAllocated", with_scalars);
    Add("MostAllocated", with_scalars);
    Add("BalancedAllocation", balanced_three);
    Add("RequestedToCapacityRatio", ratio_with_scalars);
    names_->Freeze();

    cache_ = MakeCache(host_.summaries());
    ASSERT_TRUE(cache_->Synced());
  }

  // The nodes and pods every test starts from, in a cache that writes
  // `summaries`.
  std::unique_ptr<cluster::ClusterCache> MakeCache(
      std::vector<NodeSummaryRegistration> summaries) const {
    cluster::CacheOptions options;
    options.assume_ttl = std::chrono::milliseconds(0);
    options.summaries = std::move(summaries);
    options.names = names_;
    auto cache = std::make_unique<cluster::ClusterCache>(options);
    cache->OnReplace(
        cluster::ResourceKind::kNodes,
        {NodeObject("empty", {{"cpu", 4000},
                              {"memory", 16 * kGi},
                              {"pods", 110},
                              {"ephemeral-storage", 100 * kGi}}),
         NodeObject("busy", {{"cpu", 4000},
                             {"memory", 16 * kGi},
                             {"pods", 110},
                             {"ephemeral-storage", 100 * kGi},
                             {kGpu, 4}}),
         NodeObject("pods-full", {{"cpu", 4000}, {"memory", 16 * kGi}, {"pods", 2}}),
         NodeObject("no-pods", {{"cpu", 4000}, {"memory", 16 * kGi}}),
         NodeObject("memory-tight", {{"cpu", 8000}, {"memory", 4 * kGi}, {"pods", 110}}),
         NodeObject(
             "storage-tight",
             {{"cpu", 8000}, {"memory", 16 * kGi}, {"pods", 110}, {"ephemeral-storage", kGi}}),
         NodeObject("gpu", {{"cpu", 8000}, {"memory", 32 * kGi}, {"pods", 110}, {kGpu, 4}}),
         NodeObject("zero-cpu", {{"memory", 16 * kGi}, {"pods", 110}}),
         NodeObject("huge",
                    {{"cpu", kMax}, {"memory", kMax}, {"pods", kMax}, {"ephemeral-storage", kMax}}),
         NodeObject("overcommitted", {{"cpu", 1000}, {"memory", kGi}, {"pods", 110}})});
    cache->OnReplace(
        cluster::ResourceKind::kPods,
        {PodObject("b1", "busy", {{"cpu", 1500}, {"memory", 6 * kGi}, {"ephemeral-storage", kGi}}),
         PodObject("b2", "busy", {{"cpu", 1000}, {kGpu, 1}}), PodObject("b3", "busy", {}),
         PodObject("f1", "pods-full", {{"cpu", 100}}),
         PodObject("f2", "pods-full", {{"memory", kGi}}),
         PodObject("m1", "memory-tight", {{"cpu", 100}, {"memory", 3 * kGi}}),
         PodObject("s1", "storage-tight", {{"ephemeral-storage", kGi - 10}}),
         PodObject("g1", "gpu", {{"cpu", 2000}, {"memory", 4 * kGi}, {kGpu, 3}}),
         PodObject("z1", "zero-cpu", {{"memory", kGi}}),
         PodObject("h1", "huge", {{"cpu", kMax - 5}, {"memory", kMax}, {"ephemeral-storage", 7}}),
         PodObject("h2", "huge", {{"memory", kMax}}),
         PodObject("o1", "overcommitted", {{"cpu", 3000}, {"memory", 3 * kGi}})});
    EXPECT_TRUE(cache->Synced());
    return cache;
  }

  void Add(std::string_view name, const json& args) {
    PolicyContext context;
    context.handle = &host_;
    context.names = names_.get();
    StatusOr<std::unique_ptr<Policy>> policy = registry_.Create(name, args, context);
    ASSERT_TRUE(policy.ok()) << name << ": " << policy.status().ToString();
    policies_.push_back(std::move(*policy));
  }

  // What every policy answers for `pod` on `node`, as text to compare.
  std::string Answers(const model::PodInfo& pod, const model::NodeInfo& node,
                      std::span<const model::PodInfo> victims) const {
    std::string out;
    const model::NodeInfo* const nodes[] = {&node};
    for (const std::unique_ptr<Policy>& policy : policies_) {
      RequestState state;
      out += std::string(policy->Name()) + ":";
      if (const FilterHook* filter = policy->AsFilter()) {
        EXPECT_TRUE(filter->PreFilter(state, pod).ok());
        const Verdict verdict = filter->Filter(state, pod, node);
        out += " filter " + std::to_string(static_cast<int>(verdict.code)) + " \"" +
               std::string(verdict.reason) + "\"";
      }
      if (const ScoreHook* scorer = policy->AsScorer()) {
        EXPECT_TRUE(scorer->PreScore(state, pod, nodes).ok());
        out += " score " + std::to_string(scorer->Score(state, pod, node));
      }
      if (const PreemptHook* preempter = policy->AsPreempter()) {
        // Without PreFilter, as the pipeline's preempt runs it.
        RequestState fresh;
        std::vector<uint8_t> needed(victims.size(), 1);
        const Verdict verdict = preempter->SelectVictims(fresh, pod, node, victims, needed);
        out += " preempt " + std::to_string(static_cast<int>(verdict.code)) + " \"" +
               std::string(verdict.reason) + "\" needed";
        for (uint8_t n : needed) {
          out += n != 0 ? " 1" : " 0";
        }
      }
      out += "\n";
    }
    return out;
  }

  // The pods bound to `node` in the snapshot, as preemption victims.
  static std::vector<model::PodInfo> PodsOn(const cluster::Snapshot& snap, std::string_view node) {
    std::vector<model::PodInfo> pods;
    snap.ForEachPod([&](const model::PodInfo& pod, bool) {
      if (pod.node_name == node) {
        pods.push_back(pod);
      }
    });
    return pods;
  }

  // Asserts that `node` carries a summary and answers `pod` as its copy
  // without one does.
  void ExpectSummaryAnswersAsNode(const cluster::Snapshot& snap, const model::NodeInfo& node,
                                  const model::PodInfo& pod) const {
    ASSERT_TRUE(node.has_summary()) << node.name;
    model::NodeInfo plain = node;
    plain.summarized_usage = nullptr;
    ASSERT_FALSE(plain.has_summary());
    const std::vector<model::PodInfo> victims = PodsOn(snap, node.name);
    EXPECT_EQ(Answers(pod, node, victims), Answers(pod, plain, victims)) << node.name;
  }

  Registry registry_;
  PolicyHost host_;
  std::shared_ptr<model::NameTable> names_ = std::make_shared<model::NameTable>();
  std::vector<std::unique_ptr<Policy>> policies_;
  std::unique_ptr<cluster::ClusterCache> cache_;
};

TEST_F(NodeResourcesSummaryTest, OneSummaryForAllResourcePolicies) {
  ASSERT_EQ(host_.summaries().size(), 1U);
  EXPECT_EQ(host_.summaries()[0].size, 80U);
  EXPECT_EQ(host_.NodeSummaryBytesUsed(), 80U);
}

TEST_F(NodeResourcesSummaryTest, SummaryAnswersAsTheNodeForVariedPods) {
  TestArena arena;
  auto pod = [&arena](ResourceAmounts requests) {
    return PodBuilder(arena).Name("p").Container(requests).Build();
  };
  const std::vector<model::PodInfo> pods = {
      pod({}),
      pod({{"cpu", 500}}),
      pod({{"cpu", 2500}}),
      pod({{"memory", 4 * kGi}}),
      pod({{"memory", 4 * kGi - 1}}),
      pod({{"memory", 10 * kGi}}),
      pod({{"cpu", 100}, {"ephemeral-storage", 10}}),
      pod({{"ephemeral-storage", 2 * kGi}}),
      pod({{"cpu", 100}, {"memory", kGi}, {kGpu, 1}}),
      pod({{kGpu, 2}}),
      pod({{"hugepages-2Mi", 4}}),
      pod({{"cpu", kMax}, {"memory", kMax}, {"ephemeral-storage", kMax}}),
      pod({{"cpu", 6}, {"memory", 1}}),
  };
  const std::shared_ptr<const cluster::Snapshot> snap = cache_->snapshot();
  size_t nodes = 0;
  std::set<std::string> distinct;
  snap->ForEachNode([&](const model::NodeInfo& node) {
    ++nodes;
    for (const model::PodInfo& p : pods) {
      ExpectSummaryAnswersAsNode(*snap, node, p);
      distinct.insert(Answers(p, node, PodsOn(*snap, node.name)));
    }
  });
  EXPECT_EQ(nodes, 10U);
  // The cases are not all alike: nearly every (node, pod) answers differently.
  EXPECT_GT(distinct.size(), 90U);
}

// The answers come from the summary bytes, not from the node's far fields:
// a copy whose allocatable is changed but whose summary is still valid
// answers as the stored node.
TEST_F(NodeResourcesSummaryTest, HooksReadTheSummaryWhenItIsValid) {
  TestArena arena;
  const model::PodInfo pod = PodBuilder(arena).Name("p").Container({{"cpu", 3000}}).Build();
  const std::shared_ptr<const cluster::Snapshot> snap = cache_->snapshot();
  const model::NodeInfo* empty = snap->FindNode("empty");
  ASSERT_NE(empty, nullptr);
  ASSERT_TRUE(empty->has_summary());
  model::NodeInfo shrunk = *empty;
  shrunk.allocatable.milli_cpu = 1000;
  ASSERT_TRUE(shrunk.has_summary());
  const std::string stored = Answers(pod, *empty, {});
  EXPECT_EQ(Answers(pod, shrunk, {}), stored);
  EXPECT_NE(stored.find("NodeResourcesFit: filter 0 \"\""), std::string::npos) << stored;
  // Without the summary the copy answers from its own allocatable.
  shrunk.summarized_usage = nullptr;
  const std::string own = Answers(pod, shrunk, {});
  EXPECT_NE(own.find("\"Insufficient cpu\""), std::string::npos) << own;
}

// A cache built without the host's registrations (a test or tool that built
// its profiles with another PolicyHost) writes no summary: the nodes claim
// none and the policies answer from the nodes, as with the summary.
TEST_F(NodeResourcesSummaryTest, CacheWithoutTheSummariesAnswersFromTheNode) {
  TestArena arena;
  const model::PodInfo pod =
      PodBuilder(arena).Name("p").Container({{"cpu", 100}, {"memory", kGi}}).Build();
  const std::unique_ptr<cluster::ClusterCache> bare = MakeCache({});
  const std::shared_ptr<const cluster::Snapshot> with = cache_->snapshot();
  const std::shared_ptr<const cluster::Snapshot> without = bare->snapshot();
  size_t nodes = 0;
  without->ForEachNode([&](const model::NodeInfo& node) {
    ++nodes;
    EXPECT_FALSE(node.has_summary()) << node.name;
    const model::NodeInfo* summarized = with->FindNode(node.name);
    ASSERT_NE(summarized, nullptr);
    EXPECT_EQ(Answers(pod, node, PodsOn(*without, node.name)),
              Answers(pod, *summarized, PodsOn(*with, node.name)))
        << node.name;
  });
  EXPECT_EQ(nodes, 10U);
}

TEST_F(NodeResourcesSummaryTest, ExpectedVerdictsThroughTheSummary) {
  TestArena arena;
  const std::shared_ptr<const cluster::Snapshot> snap = cache_->snapshot();
  const std::unique_ptr<Policy>& fit = policies_[0];
  ASSERT_EQ(fit->Name(), "NodeResourcesFit");
  auto verdict = [&](std::string_view node_name, const model::PodInfo& pod) {
    const model::NodeInfo* node = snap->FindNode(node_name);
    EXPECT_NE(node, nullptr);
    EXPECT_TRUE(node->has_summary());
    RequestState state;
    EXPECT_TRUE(fit->AsFilter()->PreFilter(state, pod).ok());
    return std::string(fit->AsFilter()->Filter(state, pod, *node).reason);
  };
  auto pod = [&arena](ResourceAmounts requests) {
    return PodBuilder(arena).Name("p").Container(requests).Build();
  };
  EXPECT_EQ(verdict("empty", pod({{"cpu", 4000}, {"memory", 16 * kGi}})), "");
  EXPECT_EQ(verdict("empty", pod({{"cpu", 4001}})), "Insufficient cpu");
  EXPECT_EQ(verdict("pods-full", pod({})), "Too many pods");
  EXPECT_EQ(verdict("no-pods", pod({})), "Too many pods");
  EXPECT_EQ(verdict("memory-tight", pod({{"memory", kGi}})), "");
  EXPECT_EQ(verdict("memory-tight", pod({{"memory", kGi + 1}})), "Insufficient memory");
  EXPECT_EQ(verdict("storage-tight", pod({{"ephemeral-storage", 10}})), "");
  EXPECT_EQ(verdict("storage-tight", pod({{"ephemeral-storage", 11}})),
            "Insufficient ephemeral-storage");
  EXPECT_EQ(verdict("gpu", pod({{kGpu, 1}})), "");
  EXPECT_EQ(verdict("gpu", pod({{kGpu, 2}})), "Insufficient example.com/gpu");
  EXPECT_EQ(verdict("huge", pod({{"cpu", 5}})), "");
  EXPECT_EQ(verdict("huge", pod({{"cpu", 6}})), "Insufficient cpu");
  EXPECT_EQ(verdict("huge", pod({{"memory", 1}})), "Insufficient memory");
  EXPECT_EQ(verdict("overcommitted", pod({{"cpu", 1}})), "Insufficient cpu");
}

TEST_F(NodeResourcesSummaryTest, SummaryFollowsPodEvents) {
  TestArena arena;
  const model::PodInfo pod =
      PodBuilder(arena).Name("p").Container({{"cpu", 1000}, {"memory", kGi}}).Build();
  const std::unique_ptr<Policy>& fit = policies_[0];
  const std::unique_ptr<Policy>& least = policies_[1];
  ASSERT_EQ(least->Name(), "LeastAllocated");
  auto answer = [&](std::string_view node_name) {
    const std::shared_ptr<const cluster::Snapshot> snap = cache_->snapshot();
    const model::NodeInfo* node = snap->FindNode(node_name);
    EXPECT_NE(node, nullptr);
    ExpectSummaryAnswersAsNode(*snap, *node, pod);
    RequestState state;
    EXPECT_TRUE(fit->AsFilter()->PreFilter(state, pod).ok());
    const model::NodeInfo* const nodes[] = {node};
    EXPECT_TRUE(least->AsScorer()->PreScore(state, pod, nodes).ok());
    return std::string(fit->AsFilter()->Filter(state, pod, *node).reason) + "/" +
           std::to_string(least->AsScorer()->Score(state, pod, *node));
  };
  // empty: 4000m, 16Gi. With the pod: (3000·100/4000 + 15·100/16) / 2 = (75 + 93) / 2.
  EXPECT_EQ(answer("empty"), "/84");
  // A pod bound by the watch: 2500m, 8Gi more.
  cache_->OnUpsert(cluster::ResourceKind::kPods,
                   PodObject("x1", "empty", {{"cpu", 2500}, {"memory", 8 * kGi}}));
  // (500·100/4000 + 7·100/16) / 2 = (12 + 43) / 2.
  EXPECT_EQ(answer("empty"), "/27");
  // Reserved by a bind (the assume path): 600m more leaves 400m.
  const model::PodInfo reserved = PodBuilder(arena)
                                      .Name("r")
                                      .Namespace("default")
                                      .Uid("uid-r")
                                      .Container({{"cpu", 600}})
                                      .Build();
  ASSERT_TRUE(cache_->Assume({"uid-r", "default", "r", "empty", &reserved}).ok());
  // cpu 4100m > 4000m scores 0; memory counts r's 200Mi scoring default:
  // (0 + (16Gi - 9Gi - 200Mi)·100/16Gi) / 2 = (0 + 42) / 2.
  EXPECT_EQ(answer("empty"), "Insufficient cpu/21");
  // The bind failed: back to the watch's pods only.
  ASSERT_TRUE(cache_->Forget("uid-r").ok());
  EXPECT_EQ(answer("empty"), "/27");
  // The watch deletes the pod: the node is empty again.
  cache_->OnDelete(cluster::ResourceKind::kPods, PodObject("x1", "empty", {}));
  EXPECT_EQ(answer("empty"), "/84");
  // pods-full frees a slot.
  EXPECT_EQ(answer("pods-full").substr(0, 14), "Too many pods/");
  cache_->OnDelete(cluster::ResourceKind::kPods, PodObject("f1", "pods-full", {}));
  EXPECT_EQ(answer("pods-full").substr(0, 1), "/");
  // A node event (allocatable changed) rewrites the summary too.
  cache_->OnUpsert(cluster::ResourceKind::kNodes,
                   NodeObject("empty", {{"cpu", 500}, {"memory", 16 * kGi}, {"pods", 110}}));
  // (0 + 15·100/16) / 2 = (0 + 93) / 2.
  EXPECT_EQ(answer("empty"), "Insufficient cpu/46");
}

}  // namespace
}  // namespace schedext::policy
