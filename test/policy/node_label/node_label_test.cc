#include "policy/builtin/node_label/node_label.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
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
using Labels = std::vector<std::pair<std::string, std::string>>;

constexpr std::string_view kRequired = "node(s) didn't match required labels";
constexpr std::string_view kForbidden = "node(s) had forbidden labels";

std::unique_ptr<Policy> MustCreate(std::string_view args) {
  StatusOr<std::unique_ptr<Policy>> policy = NewNodeLabel(json::parse(args), PolicyContext{});
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return policy.ok() ? std::move(*policy) : nullptr;
}

// Args with one required (forbidden) selector made of the one `expression`.
std::string RequiredExpression(std::string_view expression) {
  return R"({"required": [{"matchExpressions": [)" + std::string(expression) + "]}]}";
}
std::string ForbiddenExpression(std::string_view expression) {
  return R"({"forbidden": [{"matchExpressions": [)" + std::string(expression) + "]}]}";
}

model::NodeInfo NodeWithLabels(TestArena& arena, const Labels& labels) {
  NodeBuilder builder(arena);
  builder.Name("n");
  for (const auto& [key, value] : labels) {
    builder.Label(key, value);
  }
  return builder.Build();
}

TEST(NodeLabelTest, FiltersOnRequiredAndForbiddenSelectors) {
  struct Case {
    std::string name;
    std::string args;
    Labels labels;
    Verdict want;
  };
  const std::vector<Case> cases = {
      {"required matchLabels met",
       R"({"required": [{"matchLabels": {"zone": "a"}}]})",
       {{"zone", "a"}, {"disk", "ssd"}},
       Verdict::Success()},
      {"required matchLabels value differs",
       R"({"required": [{"matchLabels": {"zone": "a"}}]})",
       {{"zone", "b"}},
       Verdict::Unresolvable(kRequired)},
      {"required matchLabels key absent",
       R"({"required": [{"matchLabels": {"zone": "a"}}]})",
       {},
       Verdict::Unresolvable(kRequired)},
      {"matchLabels entries are ANDed",
       R"({"required": [{"matchLabels": {"zone": "a", "disk": "ssd"}}]})",
       {{"zone", "a"}},
       Verdict::Unresolvable(kRequired)},
      {"matchLabels and matchExpressions are ANDed",
       R"({"required": [{"matchLabels": {"zone": "a"},
                         "matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]})",
       {{"zone", "a"}},
       Verdict::Unresolvable(kRequired)},
      {"every required selector must match",
       R"({"required": [{"matchLabels": {"zone": "a"}}, {"matchLabels": {"disk": "ssd"}}]})",
       {{"zone", "a"}, {"disk", "hdd"}},
       Verdict::Unresolvable(kRequired)},
      {"every required selector matches",
       R"({"required": [{"matchLabels": {"zone": "a"}}, {"matchLabels": {"disk": "ssd"}}]})",
       {{"zone", "a"}, {"disk", "ssd"}},
       Verdict::Success()},
      {"In matches one of the values",
       RequiredExpression(R"({"key": "zone", "operator": "In", "values": ["a", "b"]})"),
       {{"zone", "b"}},
       Verdict::Success()},
      {"NotIn matches an absent key",
       RequiredExpression(R"({"key": "zone", "operator": "NotIn", "values": ["a"]})"),
       {},
       Verdict::Success()},
      {"NotIn rejects a listed value",
       RequiredExpression(R"({"key": "zone", "operator": "NotIn", "values": ["a"]})"),
       {{"zone", "a"}},
       Verdict::Unresolvable(kRequired)},
      {"Exists",
       RequiredExpression(R"({"key": "gpu", "operator": "Exists"})"),
       {{"gpu", ""}},
       Verdict::Success()},
      {"DoesNotExist",
       RequiredExpression(R"({"key": "gpu", "operator": "DoesNotExist"})"),
       {{"gpu", "1"}},
       Verdict::Unresolvable(kRequired)},
      {"Gt compares integers",
       RequiredExpression(R"({"key": "cores", "operator": "Gt", "values": ["8"]})"),
       {{"cores", "16"}},
       Verdict::Success()},
      {"Gt fails on equal",
       RequiredExpression(R"({"key": "cores", "operator": "Gt", "values": ["8"]})"),
       {{"cores", "8"}},
       Verdict::Unresolvable(kRequired)},
      {"Lt fails on a non-integer label",
       RequiredExpression(R"({"key": "cores", "operator": "Lt", "values": ["8"]})"),
       {{"cores", "four"}},
       Verdict::Unresolvable(kRequired)},
      {"forbidden matched",
       R"({"forbidden": [{"matchLabels": {"spot": "true"}}]})",
       {{"spot", "true"}},
       Verdict::Unresolvable(kForbidden)},
      {"forbidden not matched",
       R"({"forbidden": [{"matchLabels": {"spot": "true"}}]})",
       {{"spot", "false"}},
       Verdict::Success()},
      {"any forbidden selector rejects",
       R"({"forbidden": [{"matchLabels": {"spot": "true"}},
                         {"matchExpressions": [{"key": "legacy", "operator": "Exists"}]}]})",
       {{"legacy", "yes"}},
       Verdict::Unresolvable(kForbidden)},
      {"required met but forbidden matched",
       R"({"required": [{"matchLabels": {"zone": "a"}}],
           "forbidden": [{"matchLabels": {"spot": "true"}}]})",
       {{"zone", "a"}, {"spot", "true"}},
       Verdict::Unresolvable(kForbidden)},
      {"required is checked before forbidden",
       R"({"required": [{"matchLabels": {"zone": "a"}}],
           "forbidden": [{"matchLabels": {"spot": "true"}}]})",
       {{"zone", "b"}, {"spot", "true"}},
       Verdict::Unresolvable(kRequired)},
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
    Verdict got = filter->Filter(state, pod, NodeWithLabels(arena, c.labels));
    EXPECT_EQ(got.code, c.want.code);
    EXPECT_EQ(got.reason, c.want.reason);
  }
}

TEST(NodeLabelTest, ScoresMatchedPreferredWeightsScaledToTheBest) {
  struct Case {
    std::string name;
    std::string args;
    std::vector<Labels> nodes;
    std::vector<int64_t> want;
  };
  const std::vector<Case> cases = {
      {"weights summed and scaled to the largest sum",
       R"({"preferred": [{"weight": 60, "matchLabels": {"zone": "a"}},
                         {"weight": 20,
                          "matchExpressions": [{"key": "disk", "operator": "Exists"}]}]})",
       {{{"zone", "a"}, {"disk", "ssd"}}, {{"zone", "a"}}, {{"disk", "hdd"}}, {}},
       // raw 80, 60, 20, 0 → 100*80/80, 100*60/80 = 75, 100*20/80 = 25, 0.
       {100, 75, 25, 0}},
      {"floors like DefaultNormalizeScore",
       R"({"preferred": [{"weight": 30, "matchLabels": {"zone": "a"}},
                         {"weight": 20, "matchLabels": {"disk": "ssd"}}]})",
       {{{"zone", "a"}}, {{"disk", "ssd"}}},
       // raw 30, 20 → 100, 100*20/30 = 66.7 → 66.
       {100, 66}},
      {"nothing matches anywhere",
       R"({"preferred": [{"weight": 10, "matchLabels": {"zone": "a"}}]})",
       {{{"zone", "b"}}, {}},
       // raw 0, 0 → max 0: unchanged.
       {0, 0}},
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
    for (const Labels& labels : c.nodes) {
      nodes.push_back(NodeWithLabels(arena, labels));
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

// On nodes whose labels carry the profile's ids (as cached nodes do), Gt / Lt
// read the integer parsed when the ids were assigned: the same verdicts as
// parsing the text, on the parse's edge cases.
TEST(NodeLabelTest, GtLtOnTaggedNodesAnswerAsOnText) {
  struct Case {
    std::string value;
    bool passes;  // gen > 5 and gen < 9007199254740994
  };
  const std::vector<Case> cases = {
      {"6", true},
      {"007", true},
      {"+6", true},
      {"5", false},
      {"-7", false},
      {"", false},
      {"6.0", false},
      {"0x7", false},
      {"9007199254740993", true},
      {"9007199254740994", false},
      {"9223372036854775807", false},
      {"9223372036854775808", false},
  };
  model::NameTable table;
  PolicyContext context;
  context.names = &table;
  StatusOr<std::unique_ptr<Policy>> policy =
      NewNodeLabel(json::parse(R"({"required": [{"matchExpressions": [
        {"key": "example.com/gen", "operator": "Gt", "values": ["5"]},
        {"key": "example.com/gen", "operator": "Lt", "values": ["9007199254740994"]}]}]})"),
                   context);
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  table.Freeze();
  const FilterHook* filter = (*policy)->AsFilter();
  ASSERT_NE(filter, nullptr);
  TestArena arena;
  const model::PodInfo pod = PodBuilder(arena).Name("p").Build();
  RequestState state;
  for (const Case& c : cases) {
    SCOPED_TRACE("\"" + c.value + "\"");
    const model::NodeInfo plain =
        NodeWithLabels(arena, {{"zone", "a"}, {"example.com/gen", c.value}});
    model::NodeInfo tagged = plain;
    tagged.labels.AssignIds(table);
    ASSERT_EQ(tagged.labels.ids_from(), &table);
    for (const model::NodeInfo* node : {&plain, const_cast<const model::NodeInfo*>(&tagged)}) {
      const Verdict got = filter->Filter(state, pod, *node);
      EXPECT_EQ(got.ok(), c.passes);
      EXPECT_EQ(got.reason, c.passes ? "" : kRequired);
    }
  }
}

TEST(NodeLabelTest, OffersOnlyTheHooksItsArgsAskFor) {
  std::unique_ptr<Policy> filter_only =
      MustCreate(R"({"forbidden": [{"matchLabels": {"a": "b"}}]})");
  ASSERT_NE(filter_only, nullptr);
  EXPECT_EQ(filter_only->Name(), "NodeLabel");
  EXPECT_NE(filter_only->AsFilter(), nullptr);
  EXPECT_EQ(filter_only->AsScorer(), nullptr);

  std::unique_ptr<Policy> score_only =
      MustCreate(R"({"preferred": [{"weight": 5, "matchLabels": {"a": "b"}}]})");
  ASSERT_NE(score_only, nullptr);
  EXPECT_EQ(score_only->AsFilter(), nullptr);
  EXPECT_NE(score_only->AsScorer(), nullptr);
}

TEST(NodeLabelTest, OwnsItsStringsAfterTheArgsAreGone) {
  std::unique_ptr<Policy> policy;
  {
    std::string key = "example.com/" + std::string(40, 'k');  // beyond any small-string buffer
    json args = json::parse(RequiredExpression(
        R"({"key": ")" + key + R"(", "operator": "In", "values": ["alpha-value-long"]})"));
    StatusOr<std::unique_ptr<Policy>> created = NewNodeLabel(args, PolicyContext{});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    policy = std::move(*created);
    args = json();
    key.assign(key.size(), 'x');
  }
  TestArena arena;
  const model::PodInfo pod = PodBuilder(arena).Build();
  RequestState state;
  const model::NodeInfo match =
      NodeBuilder(arena).Label("example.com/" + std::string(40, 'k'), "alpha-value-long").Build();
  const model::NodeInfo other =
      NodeBuilder(arena).Label("example.com/x", "alpha-value-long").Build();
  EXPECT_TRUE(policy->AsFilter()->Filter(state, pod, match).ok());
  EXPECT_FALSE(policy->AsFilter()->Filter(state, pod, other).ok());
}

TEST(NodeLabelTest, RejectsInvalidArgsNamingTheField) {
  struct Case {
    std::string name;
    std::string args;
    std::string want;
  };
  const std::string p = "profiles[0].policies[1].args";
  const std::vector<Case> cases = {
      {"no selectors at all", R"({})", p + ": at least one of required, forbidden, preferred"},
      {"empty lists only", R"({"required": [], "preferred": []})",
       p + ": at least one of required, forbidden, preferred"},
      {"not an object", R"(["required"])", p + ": must be an object"},
      {"unknown key", R"({"requried": [{"matchLabels": {"a": "b"}}]})",
       p + ".requried: unknown field (known: required, forbidden, preferred)"},
      {"required not a list", R"({"required": {"matchLabels": {"a": "b"}}})",
       p + ".required: must be a list"},
      {"selector not an object", R"({"forbidden": ["a=b"]})",
       p + ".forbidden[0]: must be an object"},
      {"empty selector", R"({"required": [{"matchLabels": {"a": "b"}}, {}]})",
       p + ".required[1]: empty selector (set matchLabels or matchExpressions)"},
      {"empty matchLabels and matchExpressions",
       R"({"forbidden": [{"matchLabels": {}, "matchExpressions": []}]})",
       p + ".forbidden[0]: empty selector (set matchLabels or matchExpressions)"},
      {"unknown selector key", R"({"required": [{"matchLabel": {"a": "b"}}]})",
       p + ".required[0].matchLabel: unknown field (known: matchLabels, matchExpressions)"},
      {"matchLabels value not a string", R"({"required": [{"matchLabels": {"a": 1}}]})",
       p + ".required[0].matchLabels[a]: must be a string"},
      {"matchLabels invalid key", R"({"required": [{"matchLabels": {"a b": "c"}}]})",
       p + ".required[0].matchLabels[a b]: invalid label key \"a b\": may contain only "
           "alphanumerics, '-', '_' and '.'"},
      {"matchLabels invalid value", R"({"required": [{"matchLabels": {"a": "-c"}}]})",
       p + ".required[0].matchLabels[a]: invalid label value \"-c\": must start and end with an "
           "alphanumeric character"},
      {"expression without key", RequiredExpression(R"({"operator": "Exists"})"),
       p + ".required[0].matchExpressions[0].key: required"},
      {"expression with invalid key",
       RequiredExpression(R"({"key": "a/b/c", "operator": "Exists"})"),
       p + ".required[0].matchExpressions[0].key: invalid label key \"a/b/c\": may contain at most "
           "one '/'"},
      {"expression without operator", RequiredExpression(R"({"key": "a"})"),
       p + ".required[0].matchExpressions[0].operator: required"},
      {"bad operator", RequiredExpression(R"({"key": "a", "operator": "Equals", "values": ["b"]})"),
       p + ".required[0].matchExpressions[0].operator: must be one of \"In\", \"NotIn\", "
           "\"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\""},
      {"unknown expression key",
       RequiredExpression(R"({"key": "a", "operator": "In", "value": ["b"]})"),
       p + ".required[0].matchExpressions[0].value: unknown field (known: key, operator, values)"},
      {"In without values", ForbiddenExpression(R"({"key": "a", "operator": "In"})"),
       p + ".forbidden[0].matchExpressions[0].values: must be non-empty when operator is In or "
           "NotIn"},
      {"NotIn with an empty list",
       ForbiddenExpression(R"({"key": "a", "operator": "NotIn", "values": []})"),
       p + ".forbidden[0].matchExpressions[0].values: must be non-empty when operator is In or "
           "NotIn"},
      {"In with an invalid value",
       ForbiddenExpression(R"({"key": "a", "operator": "In", "values": ["b", "c d"]})"),
       p + ".forbidden[0].matchExpressions[0].values[1]: invalid label value \"c d\": may contain "
           "only alphanumerics, '-', '_' and '.'"},
      {"values not strings",
       ForbiddenExpression(R"({"key": "a", "operator": "In", "values": [1]})"),
       p + ".forbidden[0].matchExpressions[0].values[0]: must be a string"},
      {"Exists with values",
       RequiredExpression(R"({"key": "a", "operator": "Exists", "values": ["b"]})"),
       p + ".required[0].matchExpressions[0].values: must be empty when operator is Exists or "
           "DoesNotExist"},
      {"Gt with two values",
       RequiredExpression(R"({"key": "a", "operator": "Gt", "values": ["1", "2"]})"),
       p + ".required[0].matchExpressions[0].values: must have exactly one value when operator is "
           "Gt or Lt"},
      {"Lt without values", RequiredExpression(R"({"key": "a", "operator": "Lt"})"),
       p + ".required[0].matchExpressions[0].values: must have exactly one value when operator is "
           "Gt or Lt"},
      {"Gt with a non-integer value",
       RequiredExpression(R"({"key": "a", "operator": "Gt", "values": ["1.5"]})"),
       p + ".required[0].matchExpressions[0].values[0]: must be an integer when operator is Gt or "
           "Lt, got \"1.5\""},
      {"preferred without weight", R"({"preferred": [{"matchLabels": {"a": "b"}}]})",
       p + ".preferred[0].weight: required"},
      {"weight zero",
       R"({"preferred": [{"weight": 5, "matchLabels": {"a": "b"}},
                         {"weight": 0, "matchLabels": {"a": "b"}}]})",
       p + ".preferred[1].weight: must be between 1 and 100"},
      {"weight above 100", R"({"preferred": [{"weight": 101, "matchLabels": {"a": "b"}}]})",
       p + ".preferred[0].weight: must be between 1 and 100"},
      {"weight not an integer", R"({"preferred": [{"weight": 2.5, "matchLabels": {"a": "b"}}]})",
       p + ".preferred[0].weight: must be an integer"},
      {"weight as a string", R"({"preferred": [{"weight": "5", "matchLabels": {"a": "b"}}]})",
       p + ".preferred[0].weight: must be an integer"},
      {"preferred with an empty selector", R"({"preferred": [{"weight": 5}]})",
       p + ".preferred[0]: empty selector (set matchLabels or matchExpressions)"},
      {"unknown preferred key", R"({"preferred": [{"weight": 5, "preference": {}}]})",
       p + ".preferred[0].preference: unknown field (known: weight, matchLabels, "
           "matchExpressions)"},
  };
  PolicyContext context;
  context.args_path = p;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    StatusOr<std::unique_ptr<Policy>> policy = NewNodeLabel(json::parse(c.args), context);
    EXPECT_EQ(policy.status(), InvalidArgumentError(c.want));
  }
}

}  // namespace
}  // namespace schedext::policy
