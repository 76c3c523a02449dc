// BindCycle on its own (the service's bind verb is covered by
// test/server/service_bind_test.cc): which ReserveHooks are Unreserved on each
// failure, what the pod-bound observer receives, what the Binding carries, and
// the deadline.
#include "schedext/pipeline/bind_cycle.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
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

// Records Reserve/Unreserve into a shared log; refuses when `refuse`; asks
// for the node lock `lock` when set.
class Recorder final : public policy::Policy, public policy::ReserveHook {
 public:
  Recorder(std::string name, std::vector<std::string>& log, bool refuse,
           std::optional<policy::NodeLockSpec> lock = std::nullopt)
      : name_(std::move(name)), log_(log), refuse_(refuse), lock_(std::move(lock)) {}
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
  std::optional<policy::NodeLockSpec> NodeLock() const override { return lock_; }

 private:
  std::string name_;
  std::vector<std::string>& log_;
  bool refuse_;
  std::optional<policy::NodeLockSpec> lock_;
};

// Records what each Bind was asked to write.
class FakeBinder final : public cluster::PodBinder {
 public:
  Status Bind(const cluster::BindRequest& request) override {
    std::string call = std::string(request.pod_name) + "@" + std::string(request.node);
    for (const auto& [key, value] : request.annotations) {
      call += " " + key + "=" + value;
    }
    calls.push_back(std::move(call));
    not_after = request.not_after;
    return answer;
  }
  Status LockNode(const cluster::NodeLockRequest& r) override {
    calls.push_back("lock " + std::string(r.annotation) + " " + std::string(r.node) + " " +
                    std::string(r.pod_namespace) + "/" + std::string(r.pod_name) + " " +
                    std::to_string(r.expiry.count()) + "s");
    return lock_answer;
  }
  Status UnlockNode(const cluster::NodeLockRequest& r) override {
    calls.push_back("unlock " + std::string(r.annotation) + " " + std::string(r.node) + " " +
                    std::string(r.pod_namespace) + "/" + std::string(r.pod_name));
    return OkStatus();
  }
  Status answer;
  Status lock_answer;
  std::chrono::steady_clock::time_point not_after;
  std::vector<std::string> calls;
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

  // A profile of Recorders "a" and "b" (b refusing when `b_refuses`, a
  // asking for the node lock example.com/lock when `a_locks`).
  std::shared_ptr<const Profile> MakeProfile(bool b_refuses, bool a_locks = false) {
    policy::Registry registry;
    for (const std::string name : {"a", "b"}) {
      const bool refuse = name == "b" && b_refuses;
      std::optional<policy::NodeLockSpec> lock;
      if (name == "a" && a_locks) {
        lock = policy::NodeLockSpec{"example.com/lock", std::chrono::seconds(300)};
      }
      EXPECT_TRUE(registry
                      .Register(name,
                                [this, name, refuse, lock](const json&,
                                                           const policy::PolicyContext&)
                                    -> StatusOr<std::unique_ptr<policy::Policy>> {
                                  return std::unique_ptr<policy::Policy>(
                                      new Recorder(name, log_, refuse, lock));
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
    options.on_bound = [this](const model::PodInfo& pod, std::string_view node) {
      std::string seen = std::string(pod.name) + "@" + std::string(node);
      if (auto a = pod.annotations.Find("example.com/a")) {
        seen += " a=" + std::string(*a);
      }
      bound_.push_back(std::move(seen));
    };
    return BindCycle(std::move(options));
  }

  const BindTarget kTarget{"default", "web", "uid-web", "n1"};
  cluster::ClusterCache cache_;
  FakeBinder binder_;
  std::vector<std::string> log_;
  std::vector<std::string> bound_;
};

TEST_F(BindCycleTest, ASuccessfulBindTellsTheObserverThePodAsReserved) {
  auto profile = MakeProfile(/*b_refuses=*/false);
  ASSERT_NE(profile, nullptr);
  const Status s = MakeCycle().Run(*profile, kTarget);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(log_, (std::vector<std::string>{"reserve a web@n1", "reserve b web@n1"}));
  EXPECT_EQ(bound_, std::vector<std::string>{"web@n1 a=yes"});
  // One write: the hooks' annotations in the Binding itself.
  EXPECT_EQ(binder_.calls, std::vector<std::string>{"web@n1 example.com/a=yes example.com/b=yes"});
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
  EXPECT_TRUE(binder_.calls.empty());
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
  EXPECT_EQ(binder_.calls.size(), 1u);
  EXPECT_FALSE(cache_.snapshot()->IsAssumed("uid-web"));
}

TEST_F(BindCycleTest, ABindPastItsDeadlineWritesNothingAndReservesNothing) {
  auto profile = MakeProfile(/*b_refuses=*/false);
  ASSERT_NE(profile, nullptr);
  BindTarget late = kTarget;
  late.not_after = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
  const Status s = MakeCycle().Run(*profile, late);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "bind default/web to n1: " + std::string(kTooLate));
  EXPECT_TRUE(binder_.calls.empty());
  EXPECT_TRUE(log_.empty());
  EXPECT_TRUE(bound_.empty());
  EXPECT_FALSE(cache_.snapshot()->IsAssumed("uid-web"));
}

TEST_F(BindCycleTest, ABindWithinItsDeadlineIsMadeAndCarriesIt) {
  auto profile = MakeProfile(/*b_refuses=*/false);
  ASSERT_NE(profile, nullptr);
  BindTarget timely = kTarget;
  timely.not_after = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  const Status s = MakeCycle().Run(*profile, timely);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(binder_.calls.size(), 1u);
  // The client checks it again after its rate limiter's wait.
  EXPECT_EQ(binder_.not_after, timely.not_after);
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

TEST_F(BindCycleTest, ANodeLockIsTakenBeforeTheBindingAndLeftToTheDevicePlugin) {
  auto profile = MakeProfile(/*b_refuses=*/false, /*a_locks=*/true);
  ASSERT_NE(profile, nullptr);
  const Status s = MakeCycle().Run(*profile, kTarget);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(binder_.calls,
            (std::vector<std::string>{"lock example.com/lock n1 default/web 300s",
                                      "web@n1 example.com/a=yes example.com/b=yes"}));
  EXPECT_TRUE(cache_.snapshot()->IsAssumed("uid-web"));
}

// kube-scheduler retries a bind whose answer it lost: the pod is reserved
// there already, its first attempt took the lock, and the device plugin may
// have released it since; the retry does not take it again.
TEST_F(BindCycleTest, ARetriedBindDoesNotTakeTheNodeLockAgain) {
  auto profile = MakeProfile(/*b_refuses=*/false, /*a_locks=*/true);
  ASSERT_NE(profile, nullptr);
  const BindCycle cycle = MakeCycle();
  ASSERT_TRUE(cycle.Run(*profile, kTarget).ok());
  const Status again = cycle.Run(*profile, kTarget);
  EXPECT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(binder_.calls,
            (std::vector<std::string>{"lock example.com/lock n1 default/web 300s",
                                      "web@n1 example.com/a=yes example.com/b=yes", "web@n1"}));
}

TEST_F(BindCycleTest, ANodeLockHeldElsewhereFailsTheBindBeforeTheBinding) {
  auto profile = MakeProfile(/*b_refuses=*/false, /*a_locks=*/true);
  ASSERT_NE(profile, nullptr);
  binder_.lock_answer = FailedPreconditionError("held by default/other");
  const Status s = MakeCycle().Run(*profile, kTarget);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "bind default/web to n1: held by default/other");
  EXPECT_EQ(binder_.calls, std::vector<std::string>{"lock example.com/lock n1 default/web 300s"});
  EXPECT_EQ(log_, (std::vector<std::string>{"reserve a web@n1", "reserve b web@n1",
                                            "unreserve b web@n1", "unreserve a web@n1"}));
  EXPECT_TRUE(bound_.empty());
  EXPECT_FALSE(cache_.snapshot()->IsAssumed("uid-web"));
}

TEST_F(BindCycleTest, AFailedBindingReleasesTheNodeLock) {
  auto profile = MakeProfile(/*b_refuses=*/false, /*a_locks=*/true);
  ASSERT_NE(profile, nullptr);
  binder_.answer = UnavailableError("api server: 500");
  const Status s = MakeCycle().Run(*profile, kTarget);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(binder_.calls,
            (std::vector<std::string>{"lock example.com/lock n1 default/web 300s",
                                      "web@n1 example.com/a=yes example.com/b=yes",
                                      "unlock example.com/lock n1 default/web"}));
  EXPECT_FALSE(cache_.snapshot()->IsAssumed("uid-web"));
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
