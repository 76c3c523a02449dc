#include "schedext/model/selectors.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace schedext::model {
namespace {

StringMap Labels(std::initializer_list<std::pair<std::string_view, std::string_view>> pairs) {
  StringMap map;
  for (const auto& [key, value] : pairs) {
    map.Set(key, value);
  }
  return map;
}

TEST(StringMapTest, FindAndSetLastWins) {
  StringMap map;
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(map.Find("zone"), std::nullopt);
  map.Set("zone", "a");
  map.Set("disk", "ssd");
  map.Set("zone", "b");  // a repeated key replaces in place
  EXPECT_EQ(map.size(), 2u);
  EXPECT_EQ(map.Find("zone"), std::optional<std::string_view>("b"));
  EXPECT_EQ(map.Find("disk"), std::optional<std::string_view>("ssd"));
  EXPECT_TRUE(map.Contains("disk"));
  EXPECT_FALSE(map.Contains("gpu"));
  ASSERT_EQ(map.entries().size(), 2u);
  EXPECT_EQ(map.entries()[0].first, "zone");
  map.Set("empty", "");
  EXPECT_EQ(map.Find("empty"), std::optional<std::string_view>(""));  // present, empty value
  map.Clear();
  EXPECT_TRUE(map.empty());
}

TEST(SelectorOperatorTest, ParsesExactSpellingOnly) {
  EXPECT_EQ(ParseSelectorOperator("In"), SelectorOperator::kIn);
  EXPECT_EQ(ParseSelectorOperator("NotIn"), SelectorOperator::kNotIn);
  EXPECT_EQ(ParseSelectorOperator("Exists"), SelectorOperator::kExists);
  EXPECT_EQ(ParseSelectorOperator("DoesNotExist"), SelectorOperator::kDoesNotExist);
  EXPECT_EQ(ParseSelectorOperator("Gt"), SelectorOperator::kGt);
  EXPECT_EQ(ParseSelectorOperator("Lt"), SelectorOperator::kLt);
  for (std::string_view bad : {"in", "IN", "notin", "Equals", "", "Gt ", "exists", "gt"}) {
    EXPECT_EQ(ParseSelectorOperator(bad), std::nullopt) << bad;
  }
}

struct RequirementCase {
  std::string name;
  SelectorRequirement req;
  bool want;
};

TEST(SelectorRequirementTest, MatchesWithKubernetesSemantics) {
  // Node labels every case is checked against.
  const StringMap labels = Labels({{"zone", "a"},
                                   {"cores", "16"},
                                   {"negative", "-3"},
                                   {"padded", "007"},
                                   {"word", "many"},
                                   {"huge", "9223372036854775807"},
                                   {"toohuge", "9223372036854775808"},
                                   {"empty", ""}});
  using Op = SelectorOperator;
  const std::vector<RequirementCase> cases = {
      {"In hit", {"zone", Op::kIn, {"b", "a"}}, true},
      {"In miss", {"zone", Op::kIn, {"b", "c"}}, false},
      {"In absent key", {"gpu", Op::kIn, {"a"}}, false},
      {"In empty value", {"empty", Op::kIn, {""}}, true},
      {"In no values", {"zone", Op::kIn, {}}, false},
      {"NotIn miss", {"zone", Op::kNotIn, {"b"}}, true},
      {"NotIn hit", {"zone", Op::kNotIn, {"b", "a"}}, false},
      {"NotIn absent key matches", {"gpu", Op::kNotIn, {"a"}}, true},
      // labels.NewRequirement rejects an empty NotIn; kube-scheduler then fails the term.
      {"NotIn no values", {"gpu", Op::kNotIn, {}}, false},
      {"Exists present", {"zone", Op::kExists, {}}, true},
      {"Exists present empty value", {"empty", Op::kExists, {}}, true},
      {"Exists absent", {"gpu", Op::kExists, {}}, false},
      {"Exists with values is malformed", {"zone", Op::kExists, {"a"}}, false},
      {"DoesNotExist absent", {"gpu", Op::kDoesNotExist, {}}, true},
      {"DoesNotExist present", {"zone", Op::kDoesNotExist, {}}, false},
      {"DoesNotExist with values is malformed", {"gpu", Op::kDoesNotExist, {"a"}}, false},
      {"Gt true", {"cores", Op::kGt, {"8"}}, true},           // 16 > 8
      {"Gt equal is false", {"cores", Op::kGt, {"16"}}, false},
      {"Gt false", {"cores", Op::kGt, {"32"}}, false},
      {"Gt numeric not lexical", {"cores", Op::kGt, {"9"}}, true},  // "16" < "9" as strings
      {"Lt true", {"cores", Op::kLt, {"32"}}, true},
      {"Lt equal is false", {"cores", Op::kLt, {"16"}}, false},
      {"Lt false", {"cores", Op::kLt, {"8"}}, false},
      {"Gt absent key", {"gpu", Op::kGt, {"1"}}, false},
      {"Gt label not a number", {"word", Op::kGt, {"1"}}, false},
      {"Gt label empty", {"empty", Op::kGt, {"1"}}, false},
      {"Gt value not a number", {"cores", Op::kGt, {"x"}}, false},
      {"Gt value empty", {"cores", Op::kGt, {""}}, false},
      {"Gt no values", {"cores", Op::kGt, {}}, false},
      {"Gt two values", {"cores", Op::kGt, {"1", "2"}}, false},
      {"Gt leading zeros parse", {"padded", Op::kGt, {"06"}}, true},  // 7 > 6
      {"Lt negative label", {"negative", Op::kLt, {"0"}}, true},     // -3 < 0
      // "-1" is an int64 but no valid label value; labels.NewRequirement rejects it.
      {"Gt negative value rejected", {"cores", Op::kGt, {"-1"}}, false},
      {"Gt plus value rejected", {"cores", Op::kGt, {"+1"}}, false},
      {"Gt value with space", {"cores", Op::kGt, {" 1"}}, false},
      {"Lt int64 max label", {"huge", Op::kLt, {"9223372036854775807"}}, false},
      {"Gt int64 max label", {"huge", Op::kGt, {"9223372036854775806"}}, true},
      {"Gt label overflows int64", {"toohuge", Op::kGt, {"1"}}, false},
      {"Lt value overflows int64", {"cores", Op::kLt, {"9223372036854775808"}}, false},
  };
  for (const RequirementCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Matches(c.req, labels), c.want);
  }
}

TEST(SelectorRequirementTest, EmptyLabelsOnlyMatchAbsenceOperators) {
  const StringMap none;
  EXPECT_TRUE(Matches(SelectorRequirement{"zone", SelectorOperator::kNotIn, {"a"}}, none));
  EXPECT_TRUE(Matches(SelectorRequirement{"zone", SelectorOperator::kDoesNotExist, {}}, none));
  EXPECT_FALSE(Matches(SelectorRequirement{"zone", SelectorOperator::kIn, {"a"}}, none));
  EXPECT_FALSE(Matches(SelectorRequirement{"zone", SelectorOperator::kExists, {}}, none));
  EXPECT_FALSE(Matches(SelectorRequirement{"zone", SelectorOperator::kLt, {"1"}}, none));
}

SelectorRequirement Req(std::string_view key, SelectorOperator op,
                        std::vector<std::string_view> values) {
  return SelectorRequirement{key, op, std::move(values)};
}

struct TermCase {
  std::string name;
  NodeSelectorTerm term;
  std::string_view node_name;
  bool want;
};

TEST(NodeSelectorTermTest, AndsExpressionsAndFields) {
  const StringMap labels = Labels({{"zone", "a"}, {"disk", "ssd"}});
  using Op = SelectorOperator;
  const std::vector<TermCase> cases = {
      {"empty term matches nothing", {}, "n1", false},
      {"one expression", {{Req("zone", Op::kIn, {"a"})}, {}}, "n1", true},
      {"all expressions must hold",
       {{Req("zone", Op::kIn, {"a"}), Req("disk", Op::kIn, {"hdd"})}, {}},
       "n1",
       false},
      {"two expressions hold",
       {{Req("zone", Op::kIn, {"a"}), Req("disk", Op::kExists, {})}, {}},
       "n1",
       true},
      {"field In hit", {{}, {Req("metadata.name", Op::kIn, {"n1"})}}, "n1", true},
      {"field In miss", {{}, {Req("metadata.name", Op::kIn, {"n2"})}}, "n1", false},
      {"field NotIn hit", {{}, {Req("metadata.name", Op::kNotIn, {"n1"})}}, "n1", false},
      {"field NotIn miss", {{}, {Req("metadata.name", Op::kNotIn, {"n2"})}}, "n1", true},
      {"field and expression",
       {{Req("zone", Op::kIn, {"a"})}, {Req("metadata.name", Op::kIn, {"n1"})}},
       "n1",
       true},
      {"field holds, expression fails",
       {{Req("zone", Op::kIn, {"b"})}, {Req("metadata.name", Op::kIn, {"n1"})}},
       "n1",
       false},
      {"expression holds, field fails",
       {{Req("zone", Op::kIn, {"a"})}, {Req("metadata.name", Op::kIn, {"n2"})}},
       "n1",
       false},
      // Only metadata.name with In/NotIn and exactly one value is understood.
      {"field other key", {{}, {Req("metadata.uid", Op::kNotIn, {"x"})}}, "n1", false},
      {"field label key", {{}, {Req("zone", Op::kIn, {"a"})}}, "n1", false},
      {"field Exists", {{}, {Req("metadata.name", Op::kExists, {})}}, "n1", false},
      {"field In two values", {{}, {Req("metadata.name", Op::kIn, {"n1", "n2"})}}, "n1", false},
      {"field In no values", {{}, {Req("metadata.name", Op::kIn, {})}}, "n1", false},
      // kube-scheduler skips well-formed matchFields for a node without a name.
      {"nameless node skips fields", {{}, {Req("metadata.name", Op::kIn, {"n1"})}}, "", true},
      {"nameless node, malformed field", {{}, {Req("metadata.name", Op::kGt, {"1"})}}, "", false},
  };
  for (const TermCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Matches(c.term, labels, c.node_name), c.want);
  }
}

TEST(NodeSelectorTermTest, MatchesAnyOrsTermsAndEmptyListMatchesNothing) {
  const StringMap labels = Labels({{"zone", "a"}});
  using Op = SelectorOperator;
  const NodeSelectorTerm hit{{Req("zone", Op::kIn, {"a"})}, {}};
  const NodeSelectorTerm miss{{Req("zone", Op::kIn, {"b"})}, {}};
  const NodeSelectorTerm empty{};
  EXPECT_FALSE(MatchesAny({}, labels, "n1"));
  EXPECT_FALSE(MatchesAny(std::vector<NodeSelectorTerm>{miss}, labels, "n1"));
  EXPECT_TRUE(MatchesAny(std::vector<NodeSelectorTerm>{miss, hit}, labels, "n1"));
  EXPECT_TRUE(MatchesAny(std::vector<NodeSelectorTerm>{hit, miss}, labels, "n1"));
  // An empty term is skipped, not a wildcard.
  EXPECT_FALSE(MatchesAny(std::vector<NodeSelectorTerm>{empty}, labels, "n1"));
  EXPECT_TRUE(MatchesAny(std::vector<NodeSelectorTerm>{empty, hit}, labels, "n1"));
}

TEST(TaintEffectTest, ParsesExactSpellingOnly) {
  EXPECT_EQ(ParseTaintEffect("NoSchedule"), TaintEffect::kNoSchedule);
  EXPECT_EQ(ParseTaintEffect("PreferNoSchedule"), TaintEffect::kPreferNoSchedule);
  EXPECT_EQ(ParseTaintEffect("NoExecute"), TaintEffect::kNoExecute);
  for (std::string_view bad : {"", "noschedule", "NoSchedule ", "All"}) {
    EXPECT_EQ(ParseTaintEffect(bad), std::nullopt) << bad;
  }
}

struct TolerationCase {
  std::string name;
  Toleration toleration;
  Taint taint;
  bool want;
};

TEST(TolerationTest, ToleratesTaintMatrix) {
  using Op = TolerationOperator;
  constexpr auto kNoSchedule = TaintEffect::kNoSchedule;
  constexpr auto kNoExecute = TaintEffect::kNoExecute;
  constexpr auto kPrefer = TaintEffect::kPreferNoSchedule;
  const Taint gpu{"gpu", "true", kNoSchedule};
  const std::vector<TolerationCase> cases = {
      {"Equal same key value effect", {"gpu", Op::kEqual, "true", kNoSchedule}, gpu, true},
      {"Equal other value", {"gpu", Op::kEqual, "false", kNoSchedule}, gpu, false},
      {"Equal empty value vs set value", {"gpu", Op::kEqual, "", kNoSchedule}, gpu, false},
      {"Equal empty value vs empty value",
       {"gpu", Op::kEqual, "", kNoSchedule},
       {"gpu", "", kNoSchedule},
       true},
      {"Equal other key", {"disk", Op::kEqual, "true", kNoSchedule}, gpu, false},
      {"Equal any effect", {"gpu", Op::kEqual, "true", std::nullopt}, gpu, true},
      {"Equal other effect", {"gpu", Op::kEqual, "true", kNoExecute}, gpu, false},
      {"Equal PreferNoSchedule vs NoSchedule", {"gpu", Op::kEqual, "true", kPrefer}, gpu, false},
      {"Exists same key", {"gpu", Op::kExists, "", kNoSchedule}, gpu, true},
      {"Exists ignores value", {"gpu", Op::kExists, "whatever", std::nullopt}, gpu, true},
      {"Exists other key", {"disk", Op::kExists, "", std::nullopt}, gpu, false},
      {"Exists other effect", {"gpu", Op::kExists, "", kNoExecute}, gpu, false},
      {"Exists empty key tolerates all", {"", Op::kExists, "", std::nullopt}, gpu, true},
      {"Exists empty key tolerates NoExecute",
       {"", Op::kExists, "", std::nullopt},
       {"node.kubernetes.io/not-ready", "", kNoExecute},
       true},
      {"Exists empty key, effect still checked", {"", Op::kExists, "", kNoExecute}, gpu, false},
      {"Exists empty key, same effect", {"", Op::kExists, "", kNoSchedule}, gpu, true},
      // ToleratesTaint skips the key check whenever the toleration key is empty,
      // so an (API-invalid) empty-key Equal toleration compares values only.
      {"Equal empty key, same value", {"", Op::kEqual, "true", std::nullopt}, gpu, true},
      {"Equal empty key, other value", {"", Op::kEqual, "x", std::nullopt}, gpu, false},
      {"Equal empty key and value vs empty-key taint",
       {"", Op::kEqual, "", std::nullopt},
       {"", "", kNoSchedule},
       true},
      {"Keys are case sensitive", {"GPU", Op::kExists, "", std::nullopt}, gpu, false},
  };
  for (const TolerationCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Tolerates(c.toleration, c.taint), c.want);
  }
}

TEST(TolerationTest, TolerationsTolerateNeedsOneMatch) {
  const Taint taint{"dedicated", "infra", TaintEffect::kNoSchedule};
  const Toleration other{"gpu", TolerationOperator::kExists, "", std::nullopt};
  const Toleration wrong_value{"dedicated", TolerationOperator::kEqual, "web", std::nullopt};
  const Toleration right{"dedicated", TolerationOperator::kEqual, "infra", std::nullopt};
  EXPECT_FALSE(TolerationsTolerate({}, taint));
  EXPECT_FALSE(TolerationsTolerate(std::vector<Toleration>{other, wrong_value}, taint));
  EXPECT_TRUE(TolerationsTolerate(std::vector<Toleration>{other, wrong_value, right}, taint));
}

}  // namespace
}  // namespace schedext::model
