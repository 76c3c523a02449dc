#include "schedext/pipeline/profile.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "schedext/pipeline/explain.h"

namespace schedext::pipeline {
namespace {

using model::NodeInfo;
using model::PodInfo;
using policy::Verdict;

// Test policies, configured through args:
//   Reject   {label, code: "unschedulable"|"unresolvable"|"error", eviction: bool}
//            rejects nodes that carry `label`.
//   Label    {label} scores a node with the integer value of `label` (0 when absent);
//            Normalize leaves the scores as they are (clamps into [0, 100]).
//   Raw      {value} scores every node `value` and does not normalise it.
//   Label and Raw take {failPreScore: true}: PreScore then fails; and
//            {needsUsage: true}: NeedsNodeUsage (Score counts nodes without usage);
//            and {countBlocks: true}: ScoreNodes counts its calls and nodes.
//   Reject2, Label2, Raw2: the same policies under a second name.
//   Trim     {keep: n} keeps the first n victims; drops nodes labelled "trim-drop".
//   Nothing  no hooks at all.
class TestPolicy final : public policy::Policy,
                         public policy::FilterHook,
                         public policy::ScoreHook,
                         public policy::PreemptHook {
 public:
  TestPolicy(std::string kind, const nlohmann::json& args)
      : kind_(std::move(kind)),
        label_(args.value("label", "")),
        code_(args.value("code", "unschedulable")),
        eviction_(args.value("eviction", false)),
        value_(args.value("value", int64_t{0})),
        keep_(args.value("keep", size_t{1})),
        fail_prescore_(args.value("failPreScore", false)),
        needs_usage_(args.value("needsUsage", false)),
        count_blocks_(args.value("countBlocks", false)) {}

  std::string_view Name() const override { return kind_; }
  const FilterHook* AsFilter() const override { return kind_ == "Reject" ? this : nullptr; }
  const ScoreHook* AsScorer() const override {
    return kind_ == "Label" || kind_ == "Raw" ? this : nullptr;
  }
  const PreemptHook* AsPreempter() const override { return kind_ == "Trim" ? this : nullptr; }

  Verdict Filter(const policy::RequestState&, const PodInfo&,
                 const NodeInfo& node) const override {
    ++filter_calls;
    if (!node.labels.Contains(label_)) {
      return Verdict::Success();
    }
    if (code_ == "error") {
      return Verdict::Error("boom");
    }
    return code_ == "unresolvable" ? Verdict::Unresolvable("has label")
                                   : Verdict::Unschedulable("has label");
  }
  bool EvictionCanHelp() const override { return eviction_; }

  Status PreScore(policy::RequestState&, const PodInfo&, policy::NodeSpan) const override {
    return fail_prescore_ ? InvalidArgumentError("no state") : OkStatus();
  }
  bool NeedsNodeUsage() const override { return needs_usage_; }
  int64_t Score(const policy::RequestState&, const PodInfo&,
                const NodeInfo& node) const override {
    if (needs_usage_ && node.usage == nullptr) {
      ++scored_without_usage;
    }
    if (kind_ == "Raw") {
      return value_;
    }
    int64_t v = 0;
    if (auto text = node.labels.Find(label_)) {
      std::from_chars(text->data(), text->data() + text->size(), v);
    }
    return v;
  }
  void ScoreNodes(const policy::RequestState& state, const PodInfo& pod, policy::NodeSpan nodes,
                  std::span<int64_t> out) const override {
    if (count_blocks_) {
      ++score_blocks;
      block_nodes += static_cast<int>(nodes.size());
    }
    ScoreHook::ScoreNodes(state, pod, nodes, out);
  }
  void Normalize(const policy::RequestState& state, std::span<int64_t> scores) const override {
    if (kind_ == "Label") {
      ScoreHook::Normalize(state, scores);
    }
  }

  Verdict SelectVictims(const policy::RequestState&, const PodInfo&, const NodeInfo& node,
                        std::span<const PodInfo> victims,
                        std::span<uint8_t> needed) const override {
    if (node.labels.Contains("trim-drop")) {
      return Verdict::Unschedulable("cannot help");
    }
    for (size_t i = keep_; i < victims.size(); ++i) {
      needed[i] = 0;
    }
    return Verdict::Success();
  }

  mutable std::atomic<int> filter_calls{0};
  mutable std::atomic<int> scored_without_usage{0};
  mutable std::atomic<int> score_blocks{0};
  mutable std::atomic<int> block_nodes{0};

 private:
  std::string kind_;
  std::string label_;
  std::string code_;
  bool eviction_;
  int64_t value_;
  size_t keep_;
  bool fail_prescore_;
  bool needs_usage_;
  bool count_blocks_;
};

policy::Registry TestRegistry() {
  policy::Registry registry;
  for (const char* kind :
       {"Reject", "Reject2", "Label", "Label2", "Raw", "Raw2", "Trim", "Nothing"}) {
    std::string k = kind;
    std::string real = k == "Reject2"  ? "Reject"
                       : k == "Label2" ? "Label"
                       : k == "Raw2"   ? "Raw"
                                       : k;
    EXPECT_TRUE(registry
                    .Register(k,
                              [real](const nlohmann::json& args, const policy::PolicyContext&)
                                  -> StatusOr<std::unique_ptr<policy::Policy>> {
                                return std::unique_ptr<policy::Policy>(
                                    new TestPolicy(real, args));
                              })
                    .ok());
  }
  return registry;
}

config::PolicyConfig P(std::string name, int64_t weight, nlohmann::json args) {
  config::PolicyConfig pc;
  pc.name = std::move(name);
  pc.weight = weight;
  // `{}` in a braced list is a JSON null, not an empty object.
  pc.args = std::make_shared<const nlohmann::json>(args.is_null() ? nlohmann::json::object()
                                                                   : std::move(args));
  return pc;
}

std::shared_ptr<const Profile> MustBuild(std::vector<config::PolicyConfig> policies) {
  config::ProfileConfig pc;
  pc.name = "test";
  pc.policies = std::move(policies);
  auto built = Profile::Build(pc, TestRegistry(), "profiles[0]");
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  return built.ok() ? *built : nullptr;
}

NodeInfo Node(std::string_view name, std::vector<std::pair<std::string_view, std::string_view>>
                                         labels = {}) {
  NodeInfo n;
  n.name = name;
  for (auto [k, v] : labels) {
    n.labels.Set(k, v);
  }
  return n;
}

std::vector<const NodeInfo*> Ptrs(const std::vector<NodeInfo>& nodes) {
  std::vector<const NodeInfo*> out;
  for (const NodeInfo& n : nodes) {
    out.push_back(&n);
  }
  return out;
}

TEST(ProfileBuildTest, RejectsInvalidProfiles) {
  struct Case {
    std::string name;
    std::vector<config::PolicyConfig> policies;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"no policies", {}, "profiles[0].policies: at least one policy is required"},
      {"unknown policy",
       {P("Reject", 1, {{"label", "x"}}), P("Rejekt", 1, {})},
       "profiles[0].policies[1]: unknown policy"},
      {"zero weight", {P("Label", 0, {})}, "profiles[0].policies[0].weight: must be a positive"},
      {"duplicate", {P("Label", 1, {}), P("Label", 2, {})}, "appears twice"},
      {"no hooks", {P("Nothing", 1, {})}, "profiles[0].policies[0]: policy \"Nothing\" has"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    config::ProfileConfig pc;
    pc.name = "test";
    pc.policies = c.policies;
    auto built = Profile::Build(pc, TestRegistry(), "profiles[0]");
    ASSERT_FALSE(built.ok());
    EXPECT_EQ(built.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(built.status().message().find(c.want), std::string::npos)
        << built.status().message();
  }
}

TEST(ProfileFilterTest, PartitionsEveryNodeAndStopsAtTheFirstRejection) {
  auto profile = MustBuild({P("Reject", 1, {{"label", "a"}, {"code", "unschedulable"}}),
                            P("Reject2", 1, {{"label", "b"}, {"code", "unresolvable"}})});
  ASSERT_NE(profile, nullptr);
  const std::vector<NodeInfo> nodes = {Node("n0"), Node("n1", {{"a", "1"}}),
                                       Node("n2", {{"b", "1"}}), Node("n3", {{"a", "1"}, {"b", "1"}}),
                                       Node("n4")};
  auto ptrs = Ptrs(nodes);
  PodInfo pod;
  policy::RequestState state;
  FilterOutcome out;
  ASSERT_TRUE(profile->RunFilters(pod, ptrs, state, out).ok());
  EXPECT_EQ(out.passed, (std::vector<uint32_t>{0, 4}));
  ASSERT_EQ(out.failed.size(), 2u);
  EXPECT_EQ(out.failed[0].node, 1u);
  // n3 carries both labels: the first filter rejects it and the second never runs.
  EXPECT_EQ(out.failed[1].node, 3u);
  EXPECT_EQ(out.failed[1].reason, "has label");
  ASSERT_EQ(out.unresolvable.size(), 1u);
  EXPECT_EQ(out.unresolvable[0].node, 2u);
  const auto* second = dynamic_cast<const TestPolicy*>(profile->policies()[1].get());
  EXPECT_EQ(second->filter_calls.load(), 3);  // n0, n2, n4
}

TEST(ProfileFilterTest, ErrorVerdictFailsTheRequest) {
  auto profile = MustBuild({P("Reject", 1, {{"label", "a"}, {"code", "error"}})});
  ASSERT_NE(profile, nullptr);
  const std::vector<NodeInfo> nodes = {Node("n0"), Node("bad", {{"a", "1"}})};
  auto ptrs = Ptrs(nodes);
  PodInfo pod;
  policy::RequestState state;
  FilterOutcome out;
  Status s = profile->RunFilters(pod, ptrs, state, out);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "policy Reject: node bad: boom");
}

TEST(ProfileScoreTest, WeightsNormalisedScoresIntoZeroToTen) {
  struct Case {
    std::string name;
    int64_t w1, s1, w2, s2, want;
  };
  const std::vector<Case> cases = {
      // (2×80 + 1×50) × 10 / (100 × 3) = 2100 / 300 = 7
      {"architecture example", 2, 80, 1, 50, 7},
      // (1×100 + 1×100) × 10 / 200 = 10
      {"both maximal", 1, 100, 1, 100, 10},
      {"both zero", 1, 0, 1, 0, 0},
      // (1×5 + 1×0) × 10 / 200 = 0.25 → 0
      {"rounds down below half", 1, 5, 1, 0, 0},
      // (1×10 + 1×0) × 10 / 200 = 0.5 → 1 (half rounds up)
      {"rounds half up", 1, 10, 1, 0, 1},
      // (3×33 + 1×100) × 10 / 400 = 4.975 → 5
      {"rounds to nearest", 3, 33, 1, 100, 5},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto profile = MustBuild({P("Label", c.w1, {{"label", "x"}}), P("Raw", c.w2, {{"value", c.s2}})});
    ASSERT_NE(profile, nullptr);
    const std::string value = std::to_string(c.s1);
    const std::vector<NodeInfo> nodes = {Node("n0", {{"x", value}})};
    auto ptrs = Ptrs(nodes);
    PodInfo pod;
    ScoreScratch scratch;
    std::vector<int64_t> out;
    ASSERT_TRUE(profile->RunScorers(pod, ptrs, scratch, out).ok());
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0], c.want);
  }
}

TEST(ProfileScoreTest, ScoresEveryNodeInRequestOrder) {
  auto profile = MustBuild({P("Label", 1, {{"label", "x"}})});
  ASSERT_NE(profile, nullptr);
  // Raw 100, 250 (clamped to 100 by the default Normalize), absent (0), 40.
  const std::vector<NodeInfo> nodes = {Node("a", {{"x", "100"}}), Node("b", {{"x", "250"}}),
                                       Node("c"), Node("d", {{"x", "40"}})};
  auto ptrs = Ptrs(nodes);
  PodInfo pod;
  ScoreScratch scratch;
  std::vector<int64_t> out;
  ASSERT_TRUE(profile->RunScorers(pod, ptrs, scratch, out).ok());
  EXPECT_EQ(out, (std::vector<int64_t>{10, 10, 0, 4}));
}

TEST(ProfileScoreTest, WithoutScorersEveryNodeScoresZero) {
  auto profile = MustBuild({P("Reject", 1, {{"label", "a"}})});
  ASSERT_NE(profile, nullptr);
  const std::vector<NodeInfo> nodes = {Node("a"), Node("b")};
  auto ptrs = Ptrs(nodes);
  PodInfo pod;
  ScoreScratch scratch;
  std::vector<int64_t> out = {7, 7, 7};
  ASSERT_TRUE(profile->RunScorers(pod, ptrs, scratch, out).ok());
  EXPECT_EQ(out, (std::vector<int64_t>{0, 0}));
}

TEST(ProfileScoreTest, OutOfRangeNormalisedScoreIsAnInternalError) {
  auto profile = MustBuild({P("Raw", 1, {{"value", 101}})});
  ASSERT_NE(profile, nullptr);
  const std::vector<NodeInfo> nodes = {Node("a")};
  auto ptrs = Ptrs(nodes);
  PodInfo pod;
  ScoreScratch scratch;
  std::vector<int64_t> out;
  Status s = profile->RunScorers(pod, ptrs, scratch, out);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("policy Raw: normalized score 101 for node a"), std::string::npos);
}

// Several scorers are scored node by node, each into its own row: every
// node's weighted mean comes from its own scores of every scorer.
TEST(ProfileScoreTest, SeveralScorersScoreEveryNode) {
  auto profile = MustBuild({P("Label", 3, {{"label", "x"}}), P("Label2", 1, {{"label", "y"}}),
                            P("Raw", 1, {{"value", 20}})});
  ASSERT_NE(profile, nullptr);
  const std::vector<NodeInfo> nodes = {Node("a", {{"x", "100"}, {"y", "0"}}),
                                       Node("b", {{"y", "100"}}), Node("c"),
                                       Node("d", {{"x", "40"}, {"y", "90"}})};
  auto ptrs = Ptrs(nodes);
  PodInfo pod;
  ScoreScratch scratch;
  std::vector<int64_t> out;
  ASSERT_TRUE(profile->RunScorers(pod, ptrs, scratch, out).ok());
  // (3x + y + 20) × 10 / 500, half up: 320 → 6.4, 120 → 2.4, 20 → 0.4, 230 → 4.6.
  EXPECT_EQ(out, (std::vector<int64_t>{6, 2, 0, 5}));
  EXPECT_EQ(scratch.raw.size(), 3 * nodes.size());
}

// A failing PreScore fails the request, but only after the scorers before it
// were scored and range-checked: the error is the first one met in the
// configured order.
TEST(ProfileScoreTest, APreScoreFailureReportsAfterTheEarlierScorers) {
  const std::vector<NodeInfo> nodes = {Node("a", {{"x", "5"}})};
  auto ptrs = Ptrs(nodes);
  PodInfo pod;
  {
    auto profile = MustBuild({P("Label", 1, {{"label", "x"}}),
                              P("Raw", 1, {{"value", 1}, {"failPreScore", true}})});
    ASSERT_NE(profile, nullptr);
    ScoreScratch scratch;
    std::vector<int64_t> out;
    const Status s = profile->RunScorers(pod, ptrs, scratch, out);
    EXPECT_EQ(s.code(), StatusCode::kInternal);
    EXPECT_EQ(s.message(), "policy Raw: prescore: no state");
  }
  {
    auto profile = MustBuild({P("Raw", 1, {{"value", 101}}),
                              P("Label", 1, {{"label", "x"}, {"failPreScore", true}})});
    ASSERT_NE(profile, nullptr);
    ScoreScratch scratch;
    std::vector<int64_t> out;
    const Status s = profile->RunScorers(pod, ptrs, scratch, out);
    EXPECT_EQ(s.code(), StatusCode::kInternal);
    EXPECT_NE(s.message().find("policy Raw: normalized score 101 for node a"), std::string::npos)
        << s.message();
  }
  {
    auto profile = MustBuild({P("Label", 1, {{"label", "x"}, {"failPreScore", true}}),
                              P("Raw", 1, {{"value", 101}})});
    ASSERT_NE(profile, nullptr);
    ScoreScratch scratch;
    std::vector<int64_t> out;
    const Status s = profile->RunScorers(pod, ptrs, scratch, out);
    EXPECT_EQ(s.code(), StatusCode::kInternal);
    EXPECT_EQ(s.message(), "policy Label: prescore: no state");
  }
}

TEST(ProfileScoreTest, AScorerThatNeedsUsageFailsOnANodeWithoutAsItsPreScoreWould) {
  model::NodeUsage usage;
  std::vector<NodeInfo> nodes = {Node("a", {{"x", "5"}}), Node("b", {{"x", "7"}}),
                                 Node("c", {{"x", "9"}})};
  nodes[0].usage = &usage;
  nodes[2].usage = &usage;
  auto ptrs = Ptrs(nodes);
  PodInfo pod;
  const std::string missing =
      ": prescore: needs the cluster cache (no Kubernetes API connection): node \"b\" has no pod "
      "usage";
  {
    auto profile = MustBuild({P("Label", 1, {{"label", "x"}}),
                              P("Raw", 1, {{"value", 1}, {"needsUsage", true}})});
    ASSERT_NE(profile, nullptr);
    ScoreScratch scratch;
    std::vector<int64_t> out;
    EXPECT_EQ(profile->RunScorers(pod, ptrs, scratch, out), InternalError("policy Raw" + missing));
    const auto* raw = dynamic_cast<const TestPolicy*>(profile->policies()[1].get());
    ASSERT_NE(raw, nullptr);
    EXPECT_EQ(raw->scored_without_usage, 0);
    Explanation explanation;
    profile->Explain(pod, ptrs, ExplainScoring::kAll, explanation);
    EXPECT_EQ(explanation.score_error, "policy Raw" + missing);
    EXPECT_EQ(raw->scored_without_usage, 0);
    // With usage everywhere it scores.
    const std::vector<const NodeInfo*> warm = {ptrs[0], ptrs[2]};
    ASSERT_TRUE(profile->RunScorers(pod, warm, scratch, out).ok());
    EXPECT_EQ(out.size(), 2u);
  }
  {
    // An earlier scorer's failure is still the one reported first.
    auto profile = MustBuild({P("Raw", 1, {{"value", 101}}),
                              P("Raw2", 1, {{"value", 1}, {"needsUsage", true}})});
    ASSERT_NE(profile, nullptr);
    ScoreScratch scratch;
    std::vector<int64_t> out;
    const Status s = profile->RunScorers(pod, ptrs, scratch, out);
    EXPECT_NE(s.message().find("policy Raw: normalized score 101 for node a"), std::string::npos)
        << s.message();
  }
  {
    // An earlier PreScore failure too.
    auto profile = MustBuild({P("Label", 1, {{"label", "x"}, {"failPreScore", true}}),
                              P("Raw", 1, {{"value", 1}, {"needsUsage", true}})});
    ASSERT_NE(profile, nullptr);
    ScoreScratch scratch;
    std::vector<int64_t> out;
    EXPECT_EQ(profile->RunScorers(pod, ptrs, scratch, out).message(),
              "policy Label: prescore: no state");
  }
}

// Nodes "n0".."n<count-1>" labelled x = i % 101, all with `usage` but
// `without_usage`; `names` keeps the names alive.
std::vector<NodeInfo> ManyNodes(size_t count, std::vector<std::string>& names,
                                const model::NodeUsage* usage, size_t without_usage = ~size_t{0}) {
  names.clear();
  names.reserve(2 * count);
  std::vector<NodeInfo> nodes;
  for (size_t i = 0; i < count; ++i) {
    names.push_back("n" + std::to_string(i));
    const std::string_view name = names.back();
    names.push_back(std::to_string(i % 101));
    nodes.push_back(Node(name, {{"x", names.back()}}));
    nodes.back().usage = i == without_usage ? nullptr : usage;
  }
  return nodes;
}

// The pipeline hands the scorers blocks of nodes: every node is scored once,
// into its own place, whatever the block boundaries.
TEST(ProfileScoreTest, ScoresThousandsOfNodesInBlocks) {
  auto profile = MustBuild(
      {P("Label", 1, {{"label", "x"}, {"countBlocks", true}}), P("Raw", 1, {{"value", 50}})});
  ASSERT_NE(profile, nullptr);
  model::NodeUsage usage;
  std::vector<std::string> names;
  const std::vector<NodeInfo> nodes = ManyNodes(1000, names, &usage);
  auto ptrs = Ptrs(nodes);
  PodInfo pod;
  ScoreScratch scratch;
  std::vector<int64_t> out;
  ASSERT_TRUE(profile->RunScorers(pod, ptrs, scratch, out).ok());
  ASSERT_EQ(out.size(), nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    // (min(x, 100) + 50) × 10 / 200, rounded half up.
    const int64_t x = std::min<int64_t>(static_cast<int64_t>(i % 101), 100);
    EXPECT_EQ(out[i], ((x + 50) * 10 * 2 + 200) / 400) << "node " << i;
  }
  const auto* label = dynamic_cast<const TestPolicy*>(profile->policies()[0].get());
  ASSERT_NE(label, nullptr);
  EXPECT_EQ(label->block_nodes, 1000);
  EXPECT_GT(label->score_blocks, 1);
  EXPECT_LT(label->score_blocks, 1000);
}

// A node without usage deep inside a block: the scorers before the one that
// needs usage still score every node to the end (their errors come first),
// and that one never sees the node.
TEST(ProfileScoreTest, ANodeWithoutUsageMidBlockStopsOnlyTheScorersThatNeedIt) {
  model::NodeUsage usage;
  std::vector<std::string> names;
  const std::vector<NodeInfo> nodes = ManyNodes(300, names, &usage, 150);
  auto ptrs = Ptrs(nodes);
  PodInfo pod;
  {
    auto profile = MustBuild(
        {P("Raw", 1, {{"value", 3}}), P("Label", 1, {{"label", "x"}, {"needsUsage", true}})});
    ASSERT_NE(profile, nullptr);
    ScoreScratch scratch;
    std::vector<int64_t> out;
    EXPECT_EQ(profile->RunScorers(pod, ptrs, scratch, out),
              InternalError("policy Label: prescore: needs the cluster cache (no Kubernetes API "
                            "connection): node \"n150\" has no pod usage"));
    const auto* label = dynamic_cast<const TestPolicy*>(profile->policies()[1].get());
    ASSERT_NE(label, nullptr);
    EXPECT_EQ(label->scored_without_usage, 0);
  }
  {
    // Label before the scorer that needs usage scores every node to the end,
    // normalised in its row; Raw (needs usage) stops before n150.
    auto profile = MustBuild(
        {P("Label", 1, {{"label", "x"}}), P("Raw", 1, {{"value", 7}, {"needsUsage", true}})});
    ASSERT_NE(profile, nullptr);
    ScoreScratch scratch;
    std::vector<int64_t> out;
    const Status s = profile->RunScorers(pod, ptrs, scratch, out);
    EXPECT_NE(s.message().find("policy Raw: prescore: needs the cluster cache"), std::string::npos)
        << s.message();
    ASSERT_EQ(scratch.raw.size(), 2 * nodes.size());
    const size_t n = nodes.size();
    EXPECT_EQ(scratch.raw[150], 150 % 101);
    EXPECT_EQ(scratch.raw[299], 299 % 101);
    EXPECT_EQ(scratch.raw[n + 149], 7);
    EXPECT_EQ(scratch.raw[n + 150], 0);
    EXPECT_EQ(scratch.raw[n + 299], 0);
  }
}

TEST(ProfilePreemptTest, RechecksNodesAndTrimsVictims) {
  auto profile = MustBuild({P("Reject", 1, {{"label", "tainted"}}),
                            P("Reject2", 1, {{"label", "full"}, {"eviction", true}}),
                            P("Trim", 1, {{"keep", 1}})});
  ASSERT_NE(profile, nullptr);
  const NodeInfo tainted = Node("tainted", {{"tainted", "1"}});
  const NodeInfo full = Node("full", {{"full", "1"}});
  const NodeInfo dropped = Node("dropped", {{"trim-drop", "1"}});
  std::vector<PodInfo> victims(2);
  victims[0].uid = "v0";
  victims[1].uid = "v1";
  const std::vector<PreemptCandidate> candidates = {
      {&tainted, victims},  // a filter eviction cannot help rejects it: dropped
      {&full, victims},     // only the eviction-helpable filter rejects it: kept, trimmed
      {&dropped, victims},  // the preempt hook drops it
      {nullptr, victims},   // unknown to schedext: passed through unchanged
  };
  PodInfo preemptor;
  policy::RequestState state;
  std::vector<PreemptDecision> out;
  ASSERT_TRUE(profile->RunPreempt(preemptor, candidates, state, out).ok());
  ASSERT_EQ(out.size(), 4u);
  EXPECT_FALSE(out[0].keep);
  EXPECT_TRUE(out[1].keep);
  EXPECT_EQ(out[1].needed, (std::vector<uint8_t>{1, 0}));
  EXPECT_FALSE(out[2].keep);
  EXPECT_TRUE(out[3].keep);
  EXPECT_EQ(out[3].needed, (std::vector<uint8_t>{1, 1}));
  // Why, for explain and the preemption event.
  EXPECT_EQ(out[0].dropped_by, "Reject");
  EXPECT_FALSE(out[0].dropped_by_preempt);
  EXPECT_EQ(out[0].reason, "has label");
  EXPECT_EQ(out[1].dropped_by, "");
  EXPECT_EQ(out[1].needed_by, (std::vector<uint64_t>{1, 0}));  // Trim, the only hook
  EXPECT_EQ(out[2].dropped_by, "Trim");
  EXPECT_TRUE(out[2].dropped_by_preempt);
  EXPECT_EQ(out[2].reason, "cannot help");
  EXPECT_EQ(out[3].needed_by, (std::vector<uint64_t>{0, 0}));  // not re-checked
  EXPECT_EQ(profile->preempter_names(), (std::vector<std::string_view>{"Trim"}));
}

TEST(ProfilePreemptTest, AHookThatClearsEveryVictimLeavesTheListUnchanged) {
  auto profile = MustBuild({P("Trim", 1, {{"keep", 0}})});
  ASSERT_NE(profile, nullptr);
  const NodeInfo node = Node("n");
  std::vector<PodInfo> victims(3);
  const std::vector<PreemptCandidate> candidates = {{&node, victims}};
  PodInfo preemptor;
  policy::RequestState state;
  std::vector<PreemptDecision> out;
  ASSERT_TRUE(profile->RunPreempt(preemptor, candidates, state, out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].keep);
  EXPECT_EQ(out[0].needed, (std::vector<uint8_t>{1, 1, 1}));
  EXPECT_EQ(out[0].needed_by, (std::vector<uint64_t>{0, 0, 0}));  // no hook needed any
}

// Preempt and reserve hooks with fixed answers, configured through args:
//   Pick {need: [victim indexes], drop: bool, refuse: "message",
//         annotate: "key"} needs exactly the listed victims (or drops the
//   node); reserves with annotation key="<policy name>" or refuses.
class PickPolicy final : public policy::Policy,
                         public policy::PreemptHook,
                         public policy::ReserveHook {
 public:
  PickPolicy(std::string name, const nlohmann::json& args)
      : name_(std::move(name)),
        need_(args.value("need", std::vector<size_t>{})),
        drop_(args.value("drop", false)),
        refuse_(args.value("refuse", "")),
        annotate_(args.value("annotate", "")) {}

  std::string_view Name() const override { return name_; }
  const PreemptHook* AsPreempter() const override { return this; }
  const ReserveHook* AsReserver() const override { return this; }

  Verdict SelectVictims(const policy::RequestState&, const PodInfo&, const NodeInfo&,
                        std::span<const PodInfo>, std::span<uint8_t> needed) const override {
    // Each hook starts from every victim needed, whatever an earlier hook chose.
    for (uint8_t n : needed) {
      EXPECT_EQ(n, 1);
    }
    if (drop_) {
      return Verdict::Unschedulable("dropped");
    }
    std::fill(needed.begin(), needed.end(), 0);
    for (size_t i : need_) {
      needed[i] = 1;
    }
    return Verdict::Success();
  }

  Status Reserve(const PodInfo&, const NodeInfo&, policy::PodAnnotations& out) const override {
    ++reserve_calls;
    if (!annotate_.empty()) {
      out.emplace_back(annotate_, name_);
    }
    if (!refuse_.empty()) {
      return FailedPreconditionError(refuse_);
    }
    return OkStatus();
  }

  mutable std::atomic<int> reserve_calls{0};

 private:
  std::string name_;
  std::vector<size_t> need_;
  bool drop_;
  std::string refuse_;
  std::string annotate_;
};

std::shared_ptr<const Profile> MustBuildPicks(std::vector<config::PolicyConfig> policies) {
  policy::Registry registry;
  for (const char* name : {"PickA", "PickB", "PickC"}) {
    const std::string n = name;
    EXPECT_TRUE(registry
                    .Register(n,
                              [n](const nlohmann::json& args, const policy::PolicyContext&)
                                  -> StatusOr<std::unique_ptr<policy::Policy>> {
                                return std::unique_ptr<policy::Policy>(new PickPolicy(n, args));
                              })
                    .ok());
  }
  config::ProfileConfig pc;
  pc.name = "picks";
  pc.policies = std::move(policies);
  auto built = Profile::Build(pc, registry, "profiles[0]");
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  return built.ok() ? *built : nullptr;
}

TEST(ProfilePreemptTest, KeepsEveryVictimAnyHookNeeds) {
  auto profile = MustBuildPicks({P("PickA", 1, {{"need", {0, 2}}}), P("PickB", 1, {{"need", {2}}}),
                                 P("PickC", 1, {{"need", {3}}})});
  ASSERT_NE(profile, nullptr);
  const NodeInfo node = Node("n");
  std::vector<PodInfo> victims(5);
  const std::vector<PreemptCandidate> candidates = {{&node, victims}};
  PodInfo preemptor;
  policy::RequestState state;
  std::vector<PreemptDecision> out;
  ASSERT_TRUE(profile->RunPreempt(preemptor, candidates, state, out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].keep);
  EXPECT_EQ(out[0].needed, (std::vector<uint8_t>{1, 0, 1, 1, 0}));
  // Bit h: the h-th preempt hook (PickA, PickB, PickC) needs the victim.
  EXPECT_EQ(out[0].needed_by, (std::vector<uint64_t>{0b001, 0, 0b011, 0b100, 0}));
}

TEST(ProfilePreemptTest, AnyHookDroppingTheNodeDropsIt) {
  for (const bool first : {true, false}) {
    SCOPED_TRACE(first ? "dropped by the first hook" : "dropped by the second hook");
    auto profile = MustBuildPicks({P("PickA", 1, {{"need", {0}}, {"drop", first}}),
                                   P("PickB", 1, {{"need", {1}}, {"drop", !first}})});
    ASSERT_NE(profile, nullptr);
    const NodeInfo node = Node("n");
    std::vector<PodInfo> victims(2);
    const std::vector<PreemptCandidate> candidates = {{&node, victims}};
    PodInfo preemptor;
    policy::RequestState state;
    std::vector<PreemptDecision> out;
    ASSERT_TRUE(profile->RunPreempt(preemptor, candidates, state, out).ok());
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FALSE(out[0].keep);
    EXPECT_EQ(out[0].dropped_by, first ? "PickA" : "PickB");
    EXPECT_TRUE(out[0].dropped_by_preempt);
    EXPECT_EQ(out[0].reason, "dropped");
  }
}

TEST(ProfileReserveTest, AppendsEveryHooksAnnotationsInConfiguredOrder) {
  auto profile = MustBuildPicks({P("PickB", 1, {{"annotate", "b"}}), P("PickC", 1, {}),
                                 P("PickA", 1, {{"annotate", "a"}})});
  ASSERT_NE(profile, nullptr);
  EXPECT_TRUE(profile->has_reservers());
  policy::PodAnnotations out = {{"earlier", "x"}};
  EXPECT_EQ(profile->Reserve(PodInfo(), Node("n"), out), std::nullopt);
  EXPECT_EQ(out, (policy::PodAnnotations{{"earlier", "x"}, {"b", "PickB"}, {"a", "PickA"}}));
}

TEST(ProfileReserveTest, TheFirstRefusalWinsAndTakesBackTheAnnotations) {
  auto profile = MustBuildPicks({P("PickA", 1, {{"annotate", "a"}}),
                                 P("PickB", 1, {{"annotate", "b"}, {"refuse", "no room"}}),
                                 P("PickC", 1, {{"annotate", "c"}, {"refuse", "also no room"}})});
  ASSERT_NE(profile, nullptr);
  policy::PodAnnotations out = {{"earlier", "x"}};
  EXPECT_EQ(profile->Reserve(PodInfo(), Node("n"), out),
            std::optional<std::string>("PickB: no room"));
  EXPECT_EQ(out, (policy::PodAnnotations{{"earlier", "x"}}));
  const auto* last = dynamic_cast<const PickPolicy*>(profile->policies()[2].get());
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->reserve_calls.load(), 0);
}

TEST(ProfileReserveTest, WithoutReserversNothingHappens) {
  auto profile = MustBuild({P("Reject", 1, {{"label", "a"}})});
  ASSERT_NE(profile, nullptr);
  EXPECT_FALSE(profile->has_reservers());
  policy::PodAnnotations out;
  EXPECT_EQ(profile->Reserve(PodInfo(), Node("n"), out), std::nullopt);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace schedext::pipeline
