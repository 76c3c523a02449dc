#include "schedext/policy/registry.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "policy/args.h"

namespace schedext::policy {
namespace {

using nlohmann::json;

class FakePolicy final : public Policy {
 public:
  explicit FakePolicy(std::string name) : name_(std::move(name)) {}
  std::string_view Name() const override { return name_; }

 private:
  std::string name_;
};

// A factory that builds a FakePolicy named after args.name and context.args_path.
StatusOr<std::unique_ptr<Policy>> NewFake(const json& args, const PolicyContext& context) {
  return std::unique_ptr<Policy>(
      std::make_unique<FakePolicy>(args.value("name", "") + "@" + context.args_path));
}

TEST(RegistryTest, CreatePassesArgsAndContextToTheFactory) {
  Registry registry;
  ASSERT_TRUE(registry.Register("Fake", NewFake).ok());
  PolicyContext context;
  context.args_path = "profiles[0].policies[2].args";
  StatusOr<std::unique_ptr<Policy>> policy = registry.Create("Fake", json{{"name", "x"}}, context);
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  EXPECT_EQ((*policy)->Name(), "x@profiles[0].policies[2].args");
}

TEST(RegistryTest, RefusesDuplicateNames) {
  Registry registry;
  ASSERT_TRUE(registry.Register("Fake", NewFake).ok());
  Status status = registry.Register("Fake", NewFake);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "register policy \"Fake\": already registered");
}

TEST(RegistryTest, RefusesEmptyNamesAndNullFactories) {
  Registry registry;
  Status empty_name = registry.Register("", NewFake);
  EXPECT_EQ(empty_name.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(empty_name.message(), "register policy: empty name");
  Status null_factory = registry.Register("Fake", PolicyFactory());
  EXPECT_EQ(null_factory.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(null_factory.message(), "register policy \"Fake\": null factory");
  EXPECT_FALSE(registry.Contains("Fake"));
}

TEST(RegistryTest, UnknownPolicyListsTheKnownOnes) {
  Registry registry;
  ASSERT_TRUE(RegisterBuiltinPolicies(registry).ok());
  StatusOr<std::unique_ptr<Policy>> policy = registry.Create("NodeLable", json::object(), {});
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(policy.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(policy.status().message(),
            "unknown policy \"NodeLable\" (known: BalancedAllocation, GpuShare, HamiVgpu, "
            "LeastAllocated, MostAllocated, NodeHealth, NodeLabel, NodeLoad, NodeNumeric, "
            "NodeResourcesFit, RequestedToCapacityRatio, TaintToleration)");
}

TEST(RegistryTest, UnknownPolicyInAnEmptyRegistry) {
  Registry registry;
  StatusOr<std::unique_ptr<Policy>> policy = registry.Create("X", json::object(), {});
  EXPECT_EQ(policy.status(), NotFoundError("unknown policy \"X\" (known: none)"));
}

TEST(RegistryTest, NamesAreSorted) {
  Registry registry;
  for (const char* name : {"Zeta", "Alpha", "Mid"}) {
    ASSERT_TRUE(registry.Register(name, NewFake).ok());
  }
  EXPECT_EQ(registry.Names(), (std::vector<std::string>{"Alpha", "Mid", "Zeta"}));
  EXPECT_TRUE(registry.Contains("Mid"));
  EXPECT_FALSE(registry.Contains("mid"));
}

TEST(RegistryTest, PropagatesFactoryErrors) {
  Registry registry;
  ASSERT_TRUE(registry
                  .Register("Broken",
                            [](const json&,
                               const PolicyContext& context) -> StatusOr<std::unique_ptr<Policy>> {
                              return InvalidArgumentError(context.args_path + ": bad");
                            })
                  .ok());
  StatusOr<std::unique_ptr<Policy>> policy = registry.Create("Broken", json::object(), {});
  EXPECT_EQ(policy.status(), InvalidArgumentError("args: bad"));
}

TEST(RegistryTest, NullFromAFactoryIsAnInternalError) {
  Registry registry;
  ASSERT_TRUE(
      registry
          .Register("Null",
                    [](const json&, const PolicyContext&) -> StatusOr<std::unique_ptr<Policy>> {
                      return std::unique_ptr<Policy>();
                    })
          .ok());
  StatusOr<std::unique_ptr<Policy>> policy = registry.Create("Null", json::object(), {});
  EXPECT_EQ(policy.status(), InternalError("policy \"Null\": factory returned null"));
}

TEST(BuiltinPoliciesTest, RegistersExactlyTheTwelve) {
  Registry registry;
  ASSERT_TRUE(RegisterBuiltinPolicies(registry).ok());
  EXPECT_EQ(registry.Names(),
            (std::vector<std::string>{"BalancedAllocation", "GpuShare", "HamiVgpu", "LeastAllocated",
                                      "MostAllocated",
                                      "NodeHealth", "NodeLabel", "NodeLoad", "NodeNumeric",
                                      "NodeResourcesFit",
                                      "RequestedToCapacityRatio", "TaintToleration"}));
  // A second registration of the same list collides.
  EXPECT_EQ(RegisterBuiltinPolicies(registry).code(), StatusCode::kInvalidArgument);
}

TEST(BuiltinPoliciesTest, EachBuildsUnderItsNameWithItsHooks) {
  struct Case {
    std::string name;
    json args;
    bool want_filter;
    bool want_scorer;
    bool want_preempter = false;
    bool want_reserver = false;
  };
  const std::vector<Case> cases = {
      {"NodeLabel", json::parse(R"({"required": [{"matchLabels": {"a": "b"}}]})"), true, false},
      {"NodeLabel", json::parse(R"({"preferred": [{"weight": 1, "matchLabels": {"a": "b"}}]})"),
       false, true},
      {"TaintToleration", json::object(), true, true},
      {"NodeHealth", json::object(), true, false},
      {"NodeNumeric", json::parse(R"({"key": "example.com/load"})"), false, true},
      {"NodeNumeric", json::parse(R"({"key": "example.com/load", "max": 1})"), true, true},
      {"NodeResourcesFit", json::object(), true, false, true},
      {"LeastAllocated", json::object(), false, true},
      {"MostAllocated", json::object(), false, true},
      {"BalancedAllocation", json::object(), false, true},
      {"GpuShare", json::object(), true, true, true, true},
      {"HamiVgpu", json::object(), true, true, true, true},
      {"NodeLoad", json::parse(R"({"prometheus": {"url": "http://127.0.0.1:9"}})"), false, true},
      {"NodeLoad",
       json::parse(R"({"prometheus": {"url": "http://127.0.0.1:9"}, "hotCpuPercent": 90})"), true,
       true},
      {"RequestedToCapacityRatio",
       json::parse(
           R"({"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]})"),
       false, true},
  };
  Registry registry;
  ASSERT_TRUE(RegisterBuiltinPolicies(registry).ok());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name + " " + c.args.dump());
    StatusOr<std::unique_ptr<Policy>> policy = registry.Create(c.name, c.args, {});
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    EXPECT_EQ((*policy)->Name(), c.name);
    EXPECT_EQ((*policy)->AsFilter() != nullptr, c.want_filter);
    EXPECT_EQ((*policy)->AsScorer() != nullptr, c.want_scorer);
    EXPECT_EQ((*policy)->AsPreempter() != nullptr, c.want_preempter);
    EXPECT_EQ((*policy)->AsReserver() != nullptr, c.want_reserver);
  }
}

TEST(ArgsReaderTest, NullReadsAsAnEmptyObject) {
  const json args;  // null
  StatusOr<ArgsReader> reader = ArgsReader::Make(args, "args", {"flag"});
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_FALSE(reader->Has("flag"));
  StatusOr<bool> flag = reader->Bool("flag", true);
  ASSERT_TRUE(flag.ok());
  EXPECT_TRUE(*flag);
}

TEST(ArgsReaderTest, NullValuesReadAsAbsent) {
  const json args = json::parse(R"({"n": null, "s": null, "list": null})");
  StatusOr<ArgsReader> reader = ArgsReader::Make(args, "args", {"n", "s", "list"});
  ASSERT_TRUE(reader.ok());
  EXPECT_FALSE(reader->Has("n"));
  StatusOr<std::optional<double>> n = reader->Number("n");
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(n->has_value());
  EXPECT_EQ(reader->RequiredString("s").status(), InvalidArgumentError("args.s: required"));
  StatusOr<std::vector<std::string>> list = reader->StringList("list");
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->empty());
}

TEST(ArgsReaderTest, ReportsTheFieldOfEachError) {
  struct Case {
    std::string name;
    std::string args;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"not an object", R"([1])", "p.args: must be an object"},
      {"unknown key", R"({"nmae": 1})",
       "p.args.nmae: unknown field (known: int, number, string, enum, list, map, child)"},
      {"integer as string", R"({"int": "5"})", "p.args.int: must be an integer"},
      {"integer as float", R"({"int": 5.5})", "p.args.int: must be an integer"},
      {"integer below range", R"({"int": -1})", "p.args.int: must be between 0 and 10"},
      {"unsigned above int64", R"({"int": 18446744073709551615})",
       "p.args.int: must be between 0 and 10"},
      {"number as bool", R"({"number": false})", "p.args.number: must be a number"},
      {"string as number", R"({"string": 1})", "p.args.string: must be a string"},
      {"enum of three", R"({"enum": "d"})", R"(p.args.enum: must be one of "a", "b", "c")"},
      {"list element", R"({"list": ["a", 2]})", "p.args.list[1]: must be a string"},
      {"list as string", R"({"list": "a"})", "p.args.list: must be a list"},
      {"map value", R"({"map": {"k": true}})", "p.args.map[k]: must be a string"},
      {"map as list", R"({"map": []})", "p.args.map: must be an object"},
      {"child unknown key", R"({"child": [{"x": 1}, {"y": 2}]})",
       "p.args.child[1].y: unknown field (known: x)"},
      {"child not an object", R"({"child": [{}, 3]})", "p.args.child[1]: must be an object"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const json args = json::parse(c.args);
    Status status = [&]() -> Status {
      SCHEDEXT_ASSIGN_OR_RETURN(
          ArgsReader reader,
          ArgsReader::Make(args, "p.args",
                           {"int", "number", "string", "enum", "list", "map", "child"}));
      SCHEDEXT_RETURN_IF_ERROR(reader.Int("int", 0, 10).status());
      SCHEDEXT_RETURN_IF_ERROR(reader.Number("number").status());
      SCHEDEXT_RETURN_IF_ERROR(reader.String("string").status());
      SCHEDEXT_RETURN_IF_ERROR(reader.Enum("enum", {"a", "b", "c"}).status());
      SCHEDEXT_RETURN_IF_ERROR(reader.StringList("list").status());
      SCHEDEXT_RETURN_IF_ERROR(reader.StringMap("map").status());
      SCHEDEXT_RETURN_IF_ERROR(reader.ObjectList("child", {"x"}).status());
      return OkStatus();
    }();
    EXPECT_EQ(status, InvalidArgumentError(c.want));
  }
}

TEST(ArgsReaderTest, ValidatesQualifiedNamesAndLabelValues) {
  struct Case {
    std::string text;
    bool want_key_ok;
    bool want_value_ok;
  };
  const std::vector<Case> cases = {
      {"zone", true, true},
      {"topology.kubernetes.io/zone", true, false},
      {"a_b.c-d", true, true},
      {"", false, true},
      {"-a", false, false},
      {"a b", false, false},
      {"Example.com/x", false, false},  // prefixes are lowercase
      {"a/b/c", false, false},
      {"/x", false, false},
      {"example.com/", false, false},
      {std::string(63, 'a'), true, true},
      {std::string(64, 'a'), false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(!QualifiedNameError(c.text).has_value(), c.want_key_ok);
    EXPECT_EQ(!LabelValueError(c.text).has_value(), c.want_value_ok);
  }
}

}  // namespace
}  // namespace schedext::policy
