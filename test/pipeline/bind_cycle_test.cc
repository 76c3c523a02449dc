// BindCycle on its own (the service's bind verb is covered by
// test/server/service_bind_test.cc): which ReserveHooks are Unreserved on each
// failure, what the pod-bound observer receives, and the rollback report.
#include "schedext/pipeline/bind_cycle.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "schedext/cluster/cache.h"
#include "schedext/policy/registry.h"
#include "testing/model_builders.h"

namespace schedext::pipeline {
namespace {

using nlohmann::json;
using test::NodeBuilder;
using test::PodBuilder;
using test::TestArena;

// Records Reserve/Unreserve into a shared log; refuses when `refuse`.
class Recorder final : public policy::Policy, public policy::ReserveHook {
 public:
  Recorder(std::string name, std::vector<std::string>& log, bool refuse)
      : name_(std::move(name)), log_(log), refuse_(refuse) {}
  std::string_view Name() const override { return name_; }
  const policy::ReserveHook* AsReserver() const override { return this; }
  Status Reserve(const model::PodInfo& pod, const model::NodeInfo& node,
                 policy::PodAnnotations& out) const override {
    log_.push_back("reserve " + name_ + " " + std::string(pod.name) + "@" + std::string(node.name));
    if (refuse_) {
      return FailedPreconditionError("full");
    }
    out.emplace_back("example.com/" + name_, "yes");
    return OkStatus();
  }
  void Unreserve(const model::PodInfo& pod, std::string_view node) const override {
    log_.push_back("unreserve " + name_ + " " + std::string(pod.name) + "@" + std::string(node));
  }

 private:
  std::string name_;
  std::vector<std::string>& log_;
  bool refuse_;
};

class FakeBinder final : public cluster::PodBinder {
 public:
  Status Bind(const cluster::BindRequest& /*request*/) override { return answer; }
  Status answer;
};

class FakeAnnotator final : public cluster::PodAnnotator {
 public:
  StatusOr<std::string> Annotate(const cluster::AnnotationPatch& patch) override {
    ++calls;
    if (!patch.remove.empty()) {
      return removal;
    }
    return std::string("rv-7");
  }
  int calls = 0;
  StatusOr<std::string> removal = std::string("rv-8");
};

class BindCycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TestArena arena;
    model::NodeInfo node =
        NodeBuilder(arena).Name("n1").Ready().Allocatable({{"cpu", 4000}, {"pods", 110}}).Build();
    node.usage = nullptr;
    model::PodInfo pod = PodBuilder(arena)
                             .Name("web")
                             .Namespace("default")
                             .Uid("uid-web")
                             .Phase("Pending")
                             .Container({{"cpu", 500}})
                             .Build();
    cache_.OnReplace(cluster::ResourceKind::kNodes,
                     {{std::make_shared<const model::OwnedNode>(node), nullptr, nullptr}});
    cache_.OnReplace(cluster::ResourceKind::kPods,
                     {{nullptr, std::make_shared<const model::OwnedPod>(pod), nullptr}});
    ASSERT_TRUE(cache_.Synced());
  }

  // A profile of Recorders "a" and "b" (b refusing when `b_refuses`).
  std::shared_ptr<const Profile> MakeProfile(bool b_refuses) {
    policy::Registry registry;
    for (const std::string name : {"a", "b"}) {
      const bool refuse = name == "b" && b_refuses;
      EXPECT_TRUE(registry
                      .Register(name,
                                [this, name, refuse](const json&, const policy::PolicyContext&)
                                    -> StatusOr<std::unique_ptr<policy::Policy>> {
                                  return std::unique_ptr<policy::Policy>(
                                      new Recorder(name, log_, refuse));
                                })
                      .ok());
    }
    config::ProfileConfig config{"p",
                                 {{"a", 1, std::make_shared<const json>(json::object())},
                                  {"b", 1, std::make_shared<const json>(json::object())}}};
    auto profile = Profile::Build(config, registry, "profiles[0]");
    EXPECT_TRUE(profile.ok()) << profile.status().ToString();
    return profile.ok() ? *profile : nullptr;
  }

  BindCycle MakeCycle() {
    BindCycleOptions options;
    options.cache = &cache_;
    options.binder = &binder_;
    options.annotator = &annotator_;
    options.on_bound = [this](const model::PodInfo& pod, std::string_view node) {
      std::string seen = std::string(pod.name) + "@" + std::string(node);
      if (auto a = pod.annotations.Find("example.com/a")) {
        seen += " a=" + std::string(*a);
      }
      bound_.push_back(std::move(seen));
    };
    options.on_rollback_failure = [this](std::string_view message) {
      rollback_failures_.emplace_back(message);
    };
    return BindCycle(std::move(options));
  }

  const BindTarget kTarget{"default", "web", "uid-web", "n1"};
  cluster::ClusterCache cache_;
  FakeBinder binder_;
  FakeAnnotator annotator_;
  std::vector<std::string> log_;
  std::vector<std::string> bound_;
  std::vector<std::string> rollback_failures_;
};

TEST_F(BindCycleTest, ASuccessfulBindTellsTheObserverThePodAsReserved) {
  auto profile = MakeProfile(/*b_refuses=*/false);
  ASSERT_NE(profile, nullptr);
  const Status s = MakeCycle().Run(*profile, kTarget);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(log_, (std::vector<std::string>{"reserve a web@n1", "reserve b web@n1"}));
  EXPECT_EQ(bound_, std::vector<std::string>{"web@n1 a=yes"});
  EXPECT_EQ(annotator_.calls, 1);
  EXPECT_TRUE(cache_.snapshot()->IsAssumed("uid-web"));
}

TEST_F(BindCycleTest, ARefusalUnreservesOnlyTheHooksBeforeIt) {
  auto profile = MakeProfile(/*b_refuses=*/true);
  ASSERT_NE(profile, nullptr);
  const Status s = MakeCycle().Run(*profile, kTarget);
  EXPECT_EQ(s.message(), "bind default/web to n1: the node no longer fits the pod (b: full)");
  EXPECT_EQ(log_, (std::vector<std::string>{"reserve a web@n1", "reserve b web@n1",
                                            "unreserve a web@n1"}));
  EXPECT_TRUE(bound_.empty());
  EXPECT_EQ(annotator_.calls, 0);
  EXPECT_FALSE(cache_.snapshot()->IsAssumed("uid-web"));
}

TEST_F(BindCycleTest, AFailedBindingUnreservesEveryHookLastFirst) {
  auto profile = MakeProfile(/*b_refuses=*/false);
  ASSERT_NE(profile, nullptr);
  binder_.answer = UnavailableError("api server: 500");
  const Status s = MakeCycle().Run(*profile, kTarget);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "bind default/web to n1: api server: 500");
  EXPECT_EQ(log_, (std::vector<std::string>{"reserve a web@n1", "reserve b web@n1",
                                            "unreserve b web@n1", "unreserve a web@n1"}));
  EXPECT_TRUE(bound_.empty());
  EXPECT_EQ(annotator_.calls, 2);  // written, then removed
  EXPECT_TRUE(rollback_failures_.empty());
  EXPECT_FALSE(cache_.snapshot()->IsAssumed("uid-web"));
}

TEST_F(BindCycleTest, ARollbackThatConflictsIsReported) {
  auto profile = MakeProfile(/*b_refuses=*/false);
  ASSERT_NE(profile, nullptr);
  binder_.answer = UnavailableError("api server: 500");
  annotator_.removal = FailedPreconditionError("409 Conflict");
  const Status s = MakeCycle().Run(*profile, kTarget);
  EXPECT_FALSE(s.ok());
  ASSERT_EQ(rollback_failures_.size(), 1u);
  EXPECT_EQ(rollback_failures_[0],
            "bind default/web to n1 failed; its annotations were left in place because the pod "
            "changed meanwhile: 409 Conflict");
}

TEST_F(BindCycleTest, ATimedOutBindingKeepsTheReservationAndCountsAsBound) {
  auto profile = MakeProfile(/*b_refuses=*/false);
  ASSERT_NE(profile, nullptr);
  binder_.answer = DeadlineExceededError("timeout");
  const Status s = MakeCycle().Run(*profile, kTarget);
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(log_, (std::vector<std::string>{"reserve a web@n1", "reserve b web@n1"}));
  EXPECT_EQ(bound_, std::vector<std::string>{"web@n1 a=yes"});
  EXPECT_TRUE(cache_.snapshot()->IsAssumed("uid-web"));
}

TEST(BindCycleNoClusterTest, WithoutABinderEveryBindFails) {
  BindCycle cycle({});
  policy::Registry registry;
  ASSERT_TRUE(policy::RegisterBuiltinPolicies(registry).ok());
  config::ProfileConfig config{"p",
                               {{"NodeHealth", 1, std::make_shared<const json>(json::object())}}};
  auto profile = Profile::Build(config, registry, "profiles[0]");
  ASSERT_TRUE(profile.ok());
  const Status s = cycle.Run(**profile, {"default", "web", "uid", "n1"});
  EXPECT_NE(s.message().find("bind default/web to n1: schedext has no Kubernetes API connection"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(cycle.has_binder());
}

}  // namespace
}  // namespace schedext::pipeline
