#include "policy/builtin/taint_toleration/taint_toleration.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "schedext/policy/policy.h"
#include "testing/model_builders.h"

namespace schedext::policy {
namespace {

using model::TaintEffect;
using nlohmann::json;
using test::NodeBuilder;
using test::PodBuilder;
using test::TestArena;

constexpr std::string_view kUntolerated = "node(s) had untolerated taint";

std::unique_ptr<Policy> MustCreate() {
  StatusOr<std::unique_ptr<Policy>> policy = NewTaintToleration(json::object(), PolicyContext{});
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return policy.ok() ? std::move(*policy) : nullptr;
}

TEST(TaintTolerationTest, RejectsNodesWithUntoleratedHardTaints) {
  struct Case {
    std::string name;
    std::function<void(PodBuilder&)> pod;
    std::function<void(NodeBuilder&)> node;
    Verdict want;
  };
  const std::vector<Case> cases = {
      {"no taints", [](PodBuilder&) {}, [](NodeBuilder&) {}, Verdict::Success()},
      {"untolerated NoSchedule", [](PodBuilder&) {},
       [](NodeBuilder& n) { n.Taint("dedicated", "gpu", TaintEffect::kNoSchedule); },
       Verdict::Unresolvable(kUntolerated)},
      {"untolerated NoExecute", [](PodBuilder&) {},
       [](NodeBuilder& n) { n.Taint("dedicated", "gpu", TaintEffect::kNoExecute); },
       Verdict::Unresolvable(kUntolerated)},
      {"untolerated PreferNoSchedule passes", [](PodBuilder&) {},
       [](NodeBuilder& n) { n.Taint("dedicated", "gpu", TaintEffect::kPreferNoSchedule); },
       Verdict::Success()},
      {"Equal toleration with the same key, value and effect",
       [](PodBuilder& p) { p.Toleration("dedicated", "gpu", TaintEffect::kNoSchedule); },
       [](NodeBuilder& n) { n.Taint("dedicated", "gpu", TaintEffect::kNoSchedule); },
       Verdict::Success()},
      {"Equal toleration with another value",
       [](PodBuilder& p) { p.Toleration("dedicated", "cpu", TaintEffect::kNoSchedule); },
       [](NodeBuilder& n) { n.Taint("dedicated", "gpu", TaintEffect::kNoSchedule); },
       Verdict::Unresolvable(kUntolerated)},
      {"toleration for another effect",
       [](PodBuilder& p) { p.Toleration("dedicated", "gpu", TaintEffect::kNoExecute); },
       [](NodeBuilder& n) { n.Taint("dedicated", "gpu", TaintEffect::kNoSchedule); },
       Verdict::Unresolvable(kUntolerated)},
      {"toleration without effect tolerates every effect",
       [](PodBuilder& p) { p.Toleration("dedicated", "gpu", std::nullopt); },
       [](NodeBuilder& n) {
         n.Taint("dedicated", "gpu", TaintEffect::kNoSchedule)
             .Taint("dedicated", "gpu", TaintEffect::kNoExecute);
       },
       Verdict::Success()},
      {"Exists toleration with an empty key tolerates everything",
       [](PodBuilder& p) { p.TolerationExists("", std::nullopt); },
       [](NodeBuilder& n) {
         n.Taint("a", "1", TaintEffect::kNoSchedule).Taint("b", "", TaintEffect::kNoExecute);
       },
       Verdict::Success()},
      {"one of two hard taints untolerated",
       [](PodBuilder& p) { p.TolerationExists("a", TaintEffect::kNoSchedule); },
       [](NodeBuilder& n) {
         n.Taint("a", "1", TaintEffect::kNoSchedule).Taint("b", "2", TaintEffect::kNoSchedule);
       },
       Verdict::Unresolvable(kUntolerated)},
  };
  std::unique_ptr<Policy> policy = MustCreate();
  ASSERT_NE(policy, nullptr);
  const FilterHook* filter = policy->AsFilter();
  ASSERT_NE(filter, nullptr);
  TestArena arena;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    PodBuilder pod_builder(arena);
    c.pod(pod_builder);
    NodeBuilder node_builder(arena);
    c.node(node_builder);
    const model::PodInfo pod = pod_builder.Build();
    RequestState state;
    ASSERT_TRUE(filter->PreFilter(state, pod).ok());
    Verdict got = filter->Filter(state, pod, node_builder.Build());
    EXPECT_EQ(got.code, c.want.code);
    EXPECT_EQ(got.reason, c.want.reason);
  }
}

TEST(TaintTolerationTest, ScoresFewerUntoleratedPreferNoScheduleTaintsHigher) {
  struct Case {
    std::string name;
    std::function<void(PodBuilder&)> pod;
    std::vector<std::function<void(NodeBuilder&)>> nodes;
    std::vector<int64_t> want;
  };
  const auto none = [](NodeBuilder&) {};
  const auto one_soft = [](NodeBuilder& n) { n.Taint("a", "1", TaintEffect::kPreferNoSchedule); };
  const auto two_soft = [](NodeBuilder& n) {
    n.Taint("a", "1", TaintEffect::kPreferNoSchedule)
        .Taint("b", "2", TaintEffect::kPreferNoSchedule);
  };
  const std::vector<Case> cases = {
      {"counts untolerated soft taints",
       [](PodBuilder&) {},
       {none, one_soft, two_soft},
       // raw 0, 1, 2 → reversed DefaultNormalizeScore: 100-0, 100-100*1/2, 100-100*2/2.
       {100, 50, 0}},
      {"no soft taints anywhere",
       [](PodBuilder&) {},
       {none, none},
       // raw 0, 0 → max 0, reversed: all 100.
       {100, 100}},
      {"hard taints do not count",
       [](PodBuilder&) {},
       {[](NodeBuilder& n) { n.Taint("a", "1", TaintEffect::kNoSchedule); }, one_soft},
       // raw 0, 1 → 100, 0.
       {100, 0}},
      {"tolerated soft taints do not count",
       [](PodBuilder& p) { p.Toleration("a", "1", TaintEffect::kPreferNoSchedule); },
       {none, one_soft, two_soft},
       // raw 0, 0, 1 → 100, 100, 0.
       {100, 100, 0}},
      {"a toleration without effect counts",
       [](PodBuilder& p) { p.TolerationExists("b", std::nullopt); },
       {one_soft, two_soft},
       // raw 1, 1 → 100-100, 100-100.
       {0, 0}},
      {"a NoSchedule toleration does not tolerate a soft taint",
       [](PodBuilder& p) { p.TolerationExists("", TaintEffect::kNoSchedule); },
       {none, two_soft},
       // raw 0, 2 → 100, 0.
       {100, 0}},
      {"floors before reversing",
       [](PodBuilder&) {},
       {one_soft, two_soft,
        [](NodeBuilder& n) {
          n.Taint("a", "1", TaintEffect::kPreferNoSchedule)
              .Taint("b", "2", TaintEffect::kPreferNoSchedule)
              .Taint("c", "3", TaintEffect::kPreferNoSchedule);
        }},
       // raw 1, 2, 3 → 100-33, 100-66, 100-100.
       {67, 34, 0}},
  };
  std::unique_ptr<Policy> policy = MustCreate();
  ASSERT_NE(policy, nullptr);
  const ScoreHook* scorer = policy->AsScorer();
  ASSERT_NE(scorer, nullptr);
  TestArena arena;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    PodBuilder pod_builder(arena);
    c.pod(pod_builder);
    const model::PodInfo pod = pod_builder.Build();
    std::vector<model::NodeInfo> nodes;
    for (const auto& build : c.nodes) {
      NodeBuilder node_builder(arena);
      build(node_builder);
      nodes.push_back(node_builder.Build());
    }
    std::vector<const model::NodeInfo*> pointers = test::NodePointers(nodes);
    RequestState state;
    ASSERT_TRUE(scorer->PreScore(state, pod, pointers).ok());
    std::vector<int64_t> scores;
    for (const model::NodeInfo& node : nodes) {
      scores.push_back(scorer->Score(state, pod, node));
    }
    scorer->Normalize(state, scores);
    EXPECT_EQ(scores, c.want);
  }
}

TEST(TaintTolerationTest, TakesNoArgs) {
  struct Case {
    std::string name;
    json args;
    Status want;
  };
  const std::vector<Case> cases = {
      {"empty object", json::object(), OkStatus()},
      {"null", json(), OkStatus()},
      {"any key", json::parse(R"({"effects": ["NoSchedule"]})"),
       InvalidArgumentError("profiles[0].policies[3].args.effects: unknown field (known: none)")},
      {"not an object", json::parse("true"),
       InvalidArgumentError("profiles[0].policies[3].args: must be an object")},
  };
  PolicyContext context;
  context.args_path = "profiles[0].policies[3].args";
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    StatusOr<std::unique_ptr<Policy>> policy = NewTaintToleration(c.args, context);
    EXPECT_EQ(policy.status(), c.want);
    if (policy.ok()) {
      EXPECT_EQ((*policy)->Name(), "TaintToleration");
    }
  }
}

// The reason is one text whatever the taint (kube-scheduler's event counts
// nodes per text); Detail, for explain, names the first untolerated taint.
TEST(TaintTolerationTest, DetailNamesTheTaintTheReasonLeavesOut) {
  TestArena arena;
  std::unique_ptr<Policy> policy = MustCreate();
  ASSERT_NE(policy, nullptr);
  const FilterHook* filter = policy->AsFilter();
  const model::PodInfo pod =
      PodBuilder(arena).Toleration("team", "ml", TaintEffect::kNoSchedule).Build();
  RequestState state;
  struct Case {
    model::NodeInfo node;
    std::string_view want_reason;
    std::string want_detail;
  };
  const std::vector<Case> cases = {
      {NodeBuilder(arena).Name("a").Taint("dedicated", "gpu", TaintEffect::kNoSchedule).Build(),
       kUntolerated, "untolerated taint {dedicated: gpu}"},
      {NodeBuilder(arena)
           .Name("b")
           .Taint("team", "ml", TaintEffect::kNoSchedule)
           .Taint("maintenance", "", TaintEffect::kNoExecute)
           .Build(),
       kUntolerated, "untolerated taint {maintenance: }"},
      {NodeBuilder(arena).Name("c").Taint("soft", "x", TaintEffect::kPreferNoSchedule).Build(), "",
       ""},
      {NodeBuilder(arena).Name("d").Taint("team", "ml", TaintEffect::kNoSchedule).Build(), "", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.node.name));
    EXPECT_EQ(filter->Filter(state, pod, c.node).reason, c.want_reason);
    EXPECT_EQ(filter->Detail(state, pod, c.node), c.want_detail);
  }
}

}  // namespace
}  // namespace schedext::policy
