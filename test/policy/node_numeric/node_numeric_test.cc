#include "policy/builtin/node_numeric/node_numeric.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "schedext/model/name_table.h"
#include "schedext/policy/policy.h"
#include "schedext/policy/registry.h"
#include "testing/model_builders.h"

namespace schedext::policy {
namespace {

using nlohmann::json;
using test::NodeBuilder;
using test::PodBuilder;
using test::TestArena;

constexpr std::string_view kKey = "example.com/load";

std::unique_ptr<Policy> MustCreate(std::string_view args) {
  StatusOr<std::unique_ptr<Policy>> policy = NewNodeNumeric(json::parse(args), PolicyContext{});
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return policy.ok() ? std::move(*policy) : nullptr;
}

// A node whose label (or annotation) kKey is `value`; nullopt: no such key.
model::NodeInfo NodeWithValue(TestArena& arena, std::optional<std::string_view> value,
                              bool as_annotation = false) {
  NodeBuilder builder(arena);
  builder.Name("n").Label("zone", "a");
  if (value.has_value()) {
    if (as_annotation) {
      builder.Annotation(kKey, *value);
    } else {
      builder.Label(kKey, *value);
    }
  }
  return builder.Build();
}

TEST(NodeNumericTest, RejectsNodesOutsideMinAndMax) {
  struct Case {
    std::string name;
    std::string args;
    std::optional<std::string_view> label;
    Verdict want;
  };
  const std::vector<Case> cases = {
      {"below max", R"({"key": "example.com/load", "max": 0.8})", "0.5", Verdict::Success()},
      {"max is inclusive", R"({"key": "example.com/load", "max": 0.8})", "0.8", Verdict::Success()},
      {"above max", R"({"key": "example.com/load", "max": 0.8})", "0.81",
       Verdict::Unresolvable("node(s) had example.com/load above 0.8")},
      {"min is inclusive", R"({"key": "example.com/load", "min": 2})", "2", Verdict::Success()},
      {"below min", R"({"key": "example.com/load", "min": 2})", "1.5",
       Verdict::Unresolvable("node(s) had example.com/load below 2")},
      {"negative bounds", R"({"key": "example.com/load", "min": -1.5, "max": 3})", "-2",
       Verdict::Unresolvable("node(s) had example.com/load below -1.5")},
      {"within both", R"({"key": "example.com/load", "min": 1, "max": 3})", "2e0",
       Verdict::Success()},
      {"missing", R"({"key": "example.com/load", "max": 0.8})", std::nullopt,
       Verdict::Unresolvable("node(s) lacked a valid example.com/load")},
      {"not a number", R"({"key": "example.com/load", "max": 0.8})", "low",
       Verdict::Unresolvable("node(s) lacked a valid example.com/load")},
      {"trailing garbage", R"({"key": "example.com/load", "max": 0.8})", "0.5x",
       Verdict::Unresolvable("node(s) lacked a valid example.com/load")},
      {"leading space", R"({"key": "example.com/load", "max": 0.8})", " 0.5",
       Verdict::Unresolvable("node(s) lacked a valid example.com/load")},
      {"empty", R"({"key": "example.com/load", "max": 0.8})", "",
       Verdict::Unresolvable("node(s) lacked a valid example.com/load")},
      {"infinity", R"({"key": "example.com/load", "min": 0})", "inf",
       Verdict::Unresolvable("node(s) lacked a valid example.com/load")},
      {"NaN", R"({"key": "example.com/load", "min": 0})", "nan",
       Verdict::Unresolvable("node(s) lacked a valid example.com/load")},
      {"out of double range", R"({"key": "example.com/load", "min": 0})", "1e999",
       Verdict::Unresolvable("node(s) lacked a valid example.com/load")},
      {"missing with missingValue inside",
       R"({"key": "example.com/load", "max": 0.8, "missingValue": 0.5})", std::nullopt,
       Verdict::Success()},
      {"unparsable with missingValue outside",
       R"({"key": "example.com/load", "max": 0.8, "missingValue": 1})", "high",
       Verdict::Unresolvable("node(s) had example.com/load above 0.8")},
  };
  TestArena arena;
  const model::PodInfo pod = PodBuilder(arena).Name("p").Build();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<Policy> policy = MustCreate(c.args);
    ASSERT_NE(policy, nullptr);
    const FilterHook* filter = policy->AsFilter();
    ASSERT_NE(filter, nullptr);
    RequestState state;
    ASSERT_TRUE(filter->PreFilter(state, pod).ok());
    Verdict got = filter->Filter(state, pod, NodeWithValue(arena, c.label));
    EXPECT_EQ(got.code, c.want.code);
    EXPECT_EQ(got.reason, c.want.reason);
  }
}

TEST(NodeNumericTest, ReadsAnnotationsWhenAsked) {
  TestArena arena;
  const model::PodInfo pod = PodBuilder(arena).Build();
  RequestState state;
  std::unique_ptr<Policy> policy =
      MustCreate(R"({"key": "example.com/load", "source": "annotation", "max": 1})");
  ASSERT_NE(policy, nullptr);
  const FilterHook* filter = policy->AsFilter();
  ASSERT_NE(filter, nullptr);
  EXPECT_TRUE(filter->Filter(state, pod, NodeWithValue(arena, "0.5", /*as_annotation=*/true)).ok());
  EXPECT_EQ(filter->Filter(state, pod, NodeWithValue(arena, "2", /*as_annotation=*/true)).reason,
            "node(s) had example.com/load above 1");
  // A label of that name does not count.
  EXPECT_EQ(filter->Filter(state, pod, NodeWithValue(arena, "0.5")).reason,
            "node(s) lacked a valid example.com/load");
}

TEST(NodeNumericTest, FiltersOnlyWithMinOrMax) {
  std::unique_ptr<Policy> policy = MustCreate(R"({"key": "example.com/load"})");
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(policy->Name(), "NodeNumeric");
  EXPECT_EQ(policy->AsFilter(), nullptr);
  EXPECT_NE(policy->AsScorer(), nullptr);
}

TEST(NodeNumericTest, RawScoreIsTheValueInMillionths) {
  struct Case {
    std::string name;
    std::string_view label;
    int64_t want;
  };
  const std::vector<Case> cases = {
      {"fraction", "0.8", 800000},
      {"rounds to the nearest millionth", "0.0000026", 3},
      {"negative", "-2.5", -2500000},
      {"clamped high", "1e300", 1000000000000000000},
      {"clamped low", "-1e300", -1000000000000000000},
  };
  TestArena arena;
  const model::PodInfo pod = PodBuilder(arena).Build();
  std::unique_ptr<Policy> policy = MustCreate(R"({"key": "example.com/load"})");
  ASSERT_NE(policy, nullptr);
  RequestState state;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(policy->AsScorer()->Score(state, pod, NodeWithValue(arena, c.label)), c.want);
  }
}

TEST(NodeNumericTest, ScalesValuesAcrossTheRequestsNodes) {
  struct Case {
    std::string name;
    std::string args;
    std::vector<std::optional<std::string_view>> labels;
    std::vector<int64_t> want;
  };
  const std::optional<std::string_view> missing;
  const std::vector<Case> cases = {
      {"higher is better by default",
       R"({"key": "example.com/load"})",
       {"1", "2", "3"},
       // (v-1)*100/(3-1).
       {0, 50, 100}},
      {"lower is better",
       R"({"key": "example.com/load", "prefer": "lower"})",
       {"1", "2", "3"},
       // (3-v)*100/(3-1).
       {100, 50, 0}},
      {"floors",
       R"({"key": "example.com/load"})",
       {"0.25", "0.5", "1"},
       // (0.5-0.25)*100/(1-0.25) = 33.3 → 33.
       {0, 33, 100}},
      {"negative values",
       R"({"key": "example.com/load"})",
       {"-1", "0", "1"},
       // (0-(-1))*100/2 = 50.
       {0, 50, 100}},
      {"all equal", R"({"key": "example.com/load", "prefer": "lower"})", {"5", "5.0"}, {100, 100}},
      {"missing is worst when higher is better",
       R"({"key": "example.com/load"})",
       {"10", missing, "20", "bad"},
       // valid 10 → 0, 20 → 100; missing and unparsable → 0.
       {0, 0, 100, 0}},
      {"missing is worst when lower is better",
       R"({"key": "example.com/load", "prefer": "lower"})",
       {"10", missing, "20", "15"},
       // (20-v)*100/10: 100, missing 0, 0, 50.
       {100, 0, 0, 50}},
      {"missing beside equal values",
       R"({"key": "example.com/load"})",
       {"5", missing, "5"},
       // equal valid values → 100; missing → 0.
       {100, 0, 100}},
      {"all missing", R"({"key": "example.com/load"})", {missing, "x"}, {0, 0}},
      {"missingValue stands in",
       R"({"key": "example.com/load", "missingValue": 15})",
       {"10", missing, "20", "bad"},
       // missing and unparsable read as 15: (15-10)*100/10 = 50.
       {0, 50, 100, 50}},
      {"missingValue can be the best",
       R"({"key": "example.com/load", "prefer": "lower", "missingValue": 0})",
       {"10", missing},
       // (10-v)*100/10: 0, 100.
       {0, 100}},
      {"values beyond the fixed-point range tie",
       R"({"key": "example.com/load"})",
       {"1e300", "1e200", "0"},
       // both clamp to 1e18 fixed point: 100, 100; 0 → 0.
       {100, 100, 0}},
  };
  TestArena arena;
  const model::PodInfo pod = PodBuilder(arena).Name("p").Build();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<Policy> policy = MustCreate(c.args);
    ASSERT_NE(policy, nullptr);
    const ScoreHook* scorer = policy->AsScorer();
    ASSERT_NE(scorer, nullptr);
    std::vector<model::NodeInfo> nodes;
    for (const std::optional<std::string_view>& label : c.labels) {
      nodes.push_back(NodeWithValue(arena, label));
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

// A cached node's value is parsed once, when the cache tags its labels with
// the profile's NameTable; the verdicts and scores are exactly those of
// parsing the text per node, on every edge case of the parse.
TEST(NodeNumericTest, PreParsedValuesGiveTheSameVerdictsAndScores) {
  struct Case {
    std::optional<std::string_view> label;
    Verdict filter;
    int64_t raw;
  };
  const Verdict lacked = Verdict::Unresolvable("node(s) lacked a valid example.com/load");
  const Verdict above = Verdict::Unresolvable("node(s) had example.com/load above 100");
  const Verdict below = Verdict::Unresolvable("node(s) had example.com/load below 1");
  const std::vector<Case> cases = {
      {"007", Verdict::Success(), 7000000},
      {"50.5", Verdict::Success(), 50500000},
      {"+5", lacked, -1000000},  // missingValue -1
      {"", lacked, -1000000},
      {"0x10", lacked, -1000000},
      {" 7", lacked, -1000000},
      {"inf", lacked, -1000000},
      {std::nullopt, lacked, -1000000},
      {"-0", below, 0},
      {"1e3", above, 1000000000},
      {"9223372036854775808", above, 1000000000000000000},  // beyond int64: still a number
      {"1e999", lacked, -1000000},
  };
  model::NameTable table;
  PolicyContext context;
  context.names = &table;
  StatusOr<std::unique_ptr<Policy>> filter_policy =
      NewNodeNumeric(json::parse(R"({"key": "example.com/load", "min": 1, "max": 100})"), context);
  StatusOr<std::unique_ptr<Policy>> score_policy =
      NewNodeNumeric(json::parse(R"({"key": "example.com/load", "missingValue": -1})"), context);
  ASSERT_TRUE(filter_policy.ok());
  ASSERT_TRUE(score_policy.ok());
  table.Freeze();
  ASSERT_NE(table.Find(kKey), model::kNoNameId);
  const FilterHook* filter = (*filter_policy)->AsFilter();
  const ScoreHook* scorer = (*score_policy)->AsScorer();
  ASSERT_NE(filter, nullptr);
  ASSERT_NE(scorer, nullptr);
  TestArena arena;
  const model::PodInfo pod = PodBuilder(arena).Name("p").Build();
  std::vector<model::NodeInfo> plain;
  std::vector<model::NodeInfo> tagged;
  for (const Case& c : cases) {
    plain.push_back(NodeWithValue(arena, c.label));
    tagged.push_back(plain.back());
    tagged.back().labels.AssignIds(table);
    tagged.back().annotations.AssignIds(table);
  }
  RequestState state;
  std::vector<int64_t> plain_scores;
  std::vector<int64_t> tagged_scores;
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].label.has_value() ? "\"" + std::string(*cases[i].label) + "\""
                                            : std::string("no label"));
    ASSERT_EQ(tagged[i].labels.ids_from(), &table);
    for (const model::NodeInfo* node : {&plain[i], &tagged[i]}) {
      const Verdict got = filter->Filter(state, pod, *node);
      EXPECT_EQ(got.code, cases[i].filter.code);
      EXPECT_EQ(got.reason, cases[i].filter.reason);
    }
    plain_scores.push_back(scorer->Score(state, pod, plain[i]));
    tagged_scores.push_back(scorer->Score(state, pod, tagged[i]));
    EXPECT_EQ(tagged_scores.back(), cases[i].raw);
  }
  EXPECT_EQ(plain_scores, tagged_scores);
  scorer->Normalize(state, plain_scores);
  scorer->Normalize(state, tagged_scores);
  EXPECT_EQ(plain_scores, tagged_scores);
  EXPECT_EQ(tagged_scores[10], kMaxNodeScore);  // the clamped maximum
}

TEST(NodeNumericTest, RejectsInvalidArgsNamingTheField) {
  struct Case {
    std::string name;
    std::string args;
    std::string want;
  };
  const std::string p = "profiles[0].policies[1].args";
  const std::vector<Case> cases = {
      {"key missing", R"({})", p + ".key: required"},
      {"key not a string", R"({"key": 5})", p + ".key: must be a string"},
      {"key empty", R"({"key": ""})", p + ".key: must not be empty"},
      {"key invalid", R"({"key": "load avg"})",
       p + ".key: invalid key \"load avg\": may contain only alphanumerics, '-', '_' and '.'"},
      {"misspelt key", R"({"key": "example.com/load", "directon": "lower"})",
       p + ".directon: unknown field (known: key, source, prefer, missingValue, min, max)"},
      {"bad prefer", R"({"key": "example.com/load", "prefer": "up"})",
       p + ".prefer: must be \"higher\" or \"lower\""},
      {"prefer case matters", R"({"key": "example.com/load", "prefer": "Lower"})",
       p + ".prefer: must be \"higher\" or \"lower\""},
      {"bad source", R"({"key": "example.com/load", "source": "node"})",
       p + ".source: must be \"label\" or \"annotation\""},
      {"source not a string", R"({"key": "example.com/load", "source": 1})",
       p + ".source: must be a string"},
      {"min as a string", R"({"key": "example.com/load", "min": "0.5"})",
       p + ".min: must be a number"},
      {"max as a bool", R"({"key": "example.com/load", "max": true})",
       p + ".max: must be a number"},
      {"missingValue as a string", R"({"key": "example.com/load", "missingValue": "0"})",
       p + ".missingValue: must be a number"},
      {"min above max", R"({"key": "example.com/load", "min": 2, "max": 1.5})",
       p + ".min: must not be greater than max (2 > 1.5)"},
  };
  PolicyContext context;
  context.args_path = p;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    StatusOr<std::unique_ptr<Policy>> policy = NewNodeNumeric(json::parse(c.args), context);
    EXPECT_EQ(policy.status(), InvalidArgumentError(c.want));
  }
}

// The reasons name the bound, never the node's value (kube-scheduler's
// event counts nodes per text); Detail, for explain, has the value.
TEST(NodeNumericTest, DetailHasTheValueTheReasonLeavesOut) {
  TestArena arena;
  std::unique_ptr<Policy> policy =
      MustCreate(R"({"key": "example.com/load", "min": 10, "max": 80})");
  ASSERT_NE(policy, nullptr);
  const FilterHook* filter = policy->AsFilter();
  ASSERT_NE(filter, nullptr);
  const model::PodInfo pod = PodBuilder(arena).Build();
  RequestState state;
  struct Case {
    std::optional<std::string_view> value;
    std::string_view want_reason;
    std::string want_detail;
  };
  const std::vector<Case> cases = {
      {"81", "node(s) had example.com/load above 80", "example.com/load is 81"},
      {"99.5", "node(s) had example.com/load above 80", "example.com/load is 99.5"},
      {"3", "node(s) had example.com/load below 10", "example.com/load is 3"},
      {"-7", "node(s) had example.com/load below 10", "example.com/load is -7"},
      {"x", "node(s) lacked a valid example.com/load", ""},
      {std::nullopt, "node(s) lacked a valid example.com/load", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.value.value_or("(none)")));
    const model::NodeInfo node = NodeWithValue(arena, c.value);
    EXPECT_EQ(filter->Filter(state, pod, node).reason, c.want_reason);
    EXPECT_EQ(filter->Detail(state, pod, node), c.want_detail);
  }
}

}  // namespace
}  // namespace schedext::policy
