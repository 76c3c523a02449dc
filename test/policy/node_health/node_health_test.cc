#include "policy/builtin/node_health/node_health.h"

#include <gtest/gtest.h>

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

constexpr std::string_view kUnschedulable = "node(s) were unschedulable";
constexpr std::string_view kNotReady = "node(s) were not ready";
constexpr std::string_view kMemoryPressure = "node(s) had memory pressure";
constexpr std::string_view kDiskPressure = "node(s) had disk pressure";
constexpr std::string_view kPidPressure = "node(s) had PID pressure";
constexpr std::string_view kNetworkUnavailable = "node(s) had network unavailable";

TEST(NodeHealthTest, RejectsCordonedNotReadyAndPressuredNodes) {
  struct Case {
    std::string name;
    std::string args;
    std::function<void(PodBuilder&)> pod;
    std::function<void(NodeBuilder&)> node;
    Verdict want;
  };
  const auto any_pod = [](PodBuilder&) {};
  const std::vector<Case> cases = {
      {"healthy", "{}", any_pod, [](NodeBuilder& n) { n.Ready(); }, Verdict::Success()},
      {"healthy with pressure conditions False", "{}", any_pod,
       [](NodeBuilder& n) {
         n.Ready()
             .Condition("MemoryPressure", "False")
             .Condition("DiskPressure", "False")
             .Condition("PIDPressure", "False")
             .Condition("NetworkUnavailable", "False");
       },
       Verdict::Success()},
      {"unschedulable", "{}", any_pod, [](NodeBuilder& n) { n.Ready().Unschedulable(); },
       Verdict::Unresolvable(kUnschedulable)},
      {"unschedulable tolerated by the unschedulable taint's toleration", "{}",
       [](PodBuilder& p) {
         p.TolerationExists("node.kubernetes.io/unschedulable", TaintEffect::kNoSchedule);
       },
       [](NodeBuilder& n) { n.Ready().Unschedulable(); }, Verdict::Success()},
      {"unschedulable tolerated by a wildcard toleration", "{}",
       [](PodBuilder& p) { p.TolerationExists("", std::nullopt); },
       [](NodeBuilder& n) { n.Ready().Unschedulable(); }, Verdict::Success()},
      {"a NoExecute toleration does not tolerate cordoning", "{}",
       [](PodBuilder& p) {
         p.TolerationExists("node.kubernetes.io/unschedulable", TaintEffect::kNoExecute);
       },
       [](NodeBuilder& n) { n.Ready().Unschedulable(); }, Verdict::Unresolvable(kUnschedulable)},
      {"Ready absent", "{}", any_pod, [](NodeBuilder&) {}, Verdict::Unresolvable(kNotReady)},
      {"Ready False", "{}", any_pod, [](NodeBuilder& n) { n.Condition("Ready", "False"); },
       Verdict::Unresolvable(kNotReady)},
      {"Ready Unknown", "{}", any_pod, [](NodeBuilder& n) { n.Condition("Ready", "Unknown"); },
       Verdict::Unresolvable(kNotReady)},
      {"a type reported twice counts as its first report", "{}", any_pod,
       [](NodeBuilder& n) {
         n.Condition("Ready", "False").Condition("Ready", "True");
       },
       Verdict::Unresolvable(kNotReady)},
      {"a pressure reported twice counts as its first report", "{}", any_pod,
       [](NodeBuilder& n) {
         n.Ready().Condition("DiskPressure", "False").Condition("DiskPressure", "True");
       },
       Verdict::Success()},
      {"types match exactly (case and length)", "{}", any_pod,
       [](NodeBuilder& n) {
         n.Condition("ready", "True")
             .Condition("Ready ", "True")
             .Condition("DiskPressurE", "True")
             .Condition("Readyy", "True");
       },
       Verdict::Unresolvable(kNotReady)},
      {"status must be exactly True", "{}", any_pod,
       [](NodeBuilder& n) { n.Condition("Ready", "true"); }, Verdict::Unresolvable(kNotReady)},
      {"memory pressure", "{}", any_pod,
       [](NodeBuilder& n) { n.Ready().Condition("MemoryPressure", "True"); },
       Verdict::Unresolvable(kMemoryPressure)},
      {"disk pressure", "{}", any_pod,
       [](NodeBuilder& n) { n.Ready().Condition("DiskPressure", "True"); },
       Verdict::Unresolvable(kDiskPressure)},
      {"PID pressure", "{}", any_pod,
       [](NodeBuilder& n) { n.Ready().Condition("PIDPressure", "True"); },
       Verdict::Unresolvable(kPidPressure)},
      {"network unavailable", "{}", any_pod,
       [](NodeBuilder& n) { n.Ready().Condition("NetworkUnavailable", "True"); },
       Verdict::Unresolvable(kNetworkUnavailable)},
      {"pressure Unknown passes", "{}", any_pod,
       [](NodeBuilder& n) { n.Ready().Condition("MemoryPressure", "Unknown"); },
       Verdict::Success()},
      {"unschedulable is checked before readiness", "{}", any_pod,
       [](NodeBuilder& n) { n.Unschedulable(); }, Verdict::Unresolvable(kUnschedulable)},
      {"readiness is checked before pressure", "{}", any_pod,
       [](NodeBuilder& n) { n.Condition("DiskPressure", "True"); },
       Verdict::Unresolvable(kNotReady)},
      {"pressures in order", "{}", any_pod,
       [](NodeBuilder& n) {
         n.Ready()
             .Condition("NetworkUnavailable", "True")
             .Condition("PIDPressure", "True")
             .Condition("DiskPressure", "True");
       },
       Verdict::Unresolvable(kDiskPressure)},
      {"unschedulable check disabled", R"({"unschedulable": false})", any_pod,
       [](NodeBuilder& n) { n.Ready().Unschedulable(); }, Verdict::Success()},
      {"readiness check disabled", R"({"notReady": false})", any_pod, [](NodeBuilder&) {},
       Verdict::Success()},
      {"memory check disabled", R"({"memoryPressure": false})", any_pod,
       [](NodeBuilder& n) { n.Ready().Condition("MemoryPressure", "True"); }, Verdict::Success()},
      {"disk check disabled, PID still on", R"({"diskPressure": false})", any_pod,
       [](NodeBuilder& n) {
         n.Ready().Condition("DiskPressure", "True").Condition("PIDPressure", "True");
       },
       Verdict::Unresolvable(kPidPressure)},
      {"PID check disabled", R"({"pidPressure": false})", any_pod,
       [](NodeBuilder& n) { n.Ready().Condition("PIDPressure", "True"); }, Verdict::Success()},
      {"network check disabled", R"({"networkUnavailable": false})", any_pod,
       [](NodeBuilder& n) { n.Ready().Condition("NetworkUnavailable", "True"); },
       Verdict::Success()},
      {"explicit true keeps a check", R"({"notReady": true})", any_pod, [](NodeBuilder&) {},
       Verdict::Unresolvable(kNotReady)},
  };
  TestArena arena;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    StatusOr<std::unique_ptr<Policy>> policy = NewNodeHealth(json::parse(c.args), PolicyContext{});
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    const FilterHook* filter = (*policy)->AsFilter();
    ASSERT_NE(filter, nullptr);
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

TEST(NodeHealthTest, EveryCombinationOfChecksAndConditionsGetsTheFirstFailingReason) {
  // The filter passes a healthy node on one mask test: every set of enabled
  // checks against every set of True conditions must still give the reason
  // of the first failing check in order, or success.
  struct Check {
    const char* arg;
    const char* condition;
    bool must_be_true;
    std::string_view reason;
  };
  const Check checks[] = {{"notReady", "Ready", true, kNotReady},
                          {"memoryPressure", "MemoryPressure", false, kMemoryPressure},
                          {"diskPressure", "DiskPressure", false, kDiskPressure},
                          {"pidPressure", "PIDPressure", false, kPidPressure},
                          {"networkUnavailable", "NetworkUnavailable", false,
                           kNetworkUnavailable}};
  TestArena arena;
  PodBuilder pod_builder(arena);
  const model::PodInfo pod = pod_builder.Build();
  for (unsigned enabled = 0; enabled < 32; ++enabled) {
    json args = json::object();
    for (unsigned c = 0; c < 5; ++c) {
      args[checks[c].arg] = (enabled >> c & 1U) != 0;
    }
    StatusOr<std::unique_ptr<Policy>> policy = NewNodeHealth(args, PolicyContext{});
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    const FilterHook* filter = (*policy)->AsFilter();
    for (unsigned is_true = 0; is_true < 32; ++is_true) {
      SCOPED_TRACE("args " + args.dump() + ", True conditions mask " + std::to_string(is_true));
      NodeBuilder node_builder(arena);
      std::string_view want;
      for (unsigned c = 0; c < 5; ++c) {
        const bool holds = (is_true >> c & 1U) != 0;
        node_builder.Condition(checks[c].condition, holds ? "True" : "False");
        if (want.empty() && (enabled >> c & 1U) != 0 && holds != checks[c].must_be_true) {
          want = checks[c].reason;
        }
      }
      RequestState state;
      const Verdict got = filter->Filter(state, pod, node_builder.Build());
      EXPECT_EQ(got.code, want.empty() ? Verdict::Code::kSuccess
                                       : Verdict::Code::kUnschedulableAndUnresolvable);
      EXPECT_EQ(got.reason, want);
    }
  }
}

TEST(NodeHealthTest, IsAFilterOnly) {
  StatusOr<std::unique_ptr<Policy>> policy = NewNodeHealth(json::object(), PolicyContext{});
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  EXPECT_EQ((*policy)->Name(), "NodeHealth");
  EXPECT_NE((*policy)->AsFilter(), nullptr);
  EXPECT_EQ((*policy)->AsScorer(), nullptr);
}

TEST(NodeHealthTest, RejectsInvalidArgsNamingTheField) {
  struct Case {
    std::string name;
    std::string args;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"unknown key", R"({"notready": false})",
       "profiles[1].policies[0].args.notready: unknown field (known: unschedulable, notReady, "
       "memoryPressure, diskPressure, pidPressure, networkUnavailable)"},
      {"string instead of bool", R"({"notReady": "false"})",
       "profiles[1].policies[0].args.notReady: must be a boolean"},
      {"number instead of bool", R"({"pidPressure": 0})",
       "profiles[1].policies[0].args.pidPressure: must be a boolean"},
      {"not an object", R"("all")", "profiles[1].policies[0].args: must be an object"},
  };
  PolicyContext context;
  context.args_path = "profiles[1].policies[0].args";
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    StatusOr<std::unique_ptr<Policy>> policy = NewNodeHealth(json::parse(c.args), context);
    EXPECT_EQ(policy.status(), InvalidArgumentError(c.want));
  }
}

}  // namespace
}  // namespace schedext::policy
