// bind with a profile that annotates pods (a ReserveHook): the one API call,
// the exact annotations it carries, the deadline, and what happens to the
// cache's reservation on each outcome. A test policy
// stands in for GpuShare so that only the service's flow is under test.
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "schedext/cluster/cache.h"
#include "schedext/policy/registry.h"
#include "schedext/server/service.h"
#include "testing/json_builders.h"
#include "testing/model_builders.h"
#include "testing/test_service.h"

namespace schedext::server {
namespace {

using nlohmann::json;
using test::NodeBuilder;
using test::PodBuilder;
using test::TestArena;

// Annotates the pod with the node it is reserved on and the pod's name;
// refuses nodes labelled slots=none.
class SlotPolicy final : public policy::Policy, public policy::ReserveHook {
 public:
  std::string_view Name() const override { return "Slot"; }
  const policy::ReserveHook* AsReserver() const override { return this; }
  Status Reserve(const model::PodInfo& pod, const model::NodeInfo& node,
                 policy::PodAnnotations& out) const override {
    if (node.labels.Find("slots") == "none") {
      return FailedPreconditionError("no free slot");
    }
    out.emplace_back("example.com/slot", std::string(node.name));
    out.emplace_back("example.com/pod", std::string(pod.name));
    return OkStatus();
  }
};

// What the binder saw, in order.
struct CallLog {
  std::mutex mu;
  std::vector<std::string> calls;
  void Add(std::string call) {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back(std::move(call));
  }
};

class FakeBinder final : public cluster::PodBinder {
 public:
  explicit FakeBinder(CallLog& log) : log_(log) {}
  Status Bind(const cluster::BindRequest& r) override {
    std::string call = "bind " + std::string(r.pod_namespace) + "/" + std::string(r.pod_name) +
                       " uid=" + std::string(r.pod_uid) + " -> " + std::string(r.node);
    for (const auto& [key, value] : r.annotations) {
      call += " " + key + "=" + value;
    }
    log_.Add(std::move(call));
    not_after = r.not_after;
    if (during_bind) {
      during_bind();
    }
    return answer;
  }
  Status answer;
  std::function<void()> during_bind;
  std::chrono::steady_clock::time_point not_after;

 private:
  CallLog& log_;
};

constexpr std::string_view kUid = "uid-web-1";

// "slot" reserves (Slot) and fits; "plain" does not reserve.
constexpr std::string_view kProfiles = R"(
profiles:
  - name: slot
    policies:
      - name: Slot
      - name: NodeResourcesFit
  - name: plain
    policies:
      - name: NodeHealth
)";

class ServiceBindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = std::make_unique<cluster::ClusterCache>();
    TestArena arena;
    std::vector<cluster::InformerObject> nodes;
    for (const char* name : {"n1", "n2"}) {
      NodeBuilder node(arena);
      node.Name(name).Ready().Allocatable({{"cpu", 4000}, {"memory", 8LL << 30}, {"pods", 110}});
      if (std::string_view(name) == "n2") {
        node.Label("slots", "none");
      }
      model::NodeInfo info = node.Build();
      info.usage = nullptr;
      nodes.push_back({std::make_shared<const model::OwnedNode>(info), nullptr, nullptr});
    }
    std::vector<cluster::InformerObject> pods;
    model::PodInfo pod =
        PodBuilder(arena).Name("web-1").Namespace("default").Uid(kUid).Phase("Pending")
            .Container({{"cpu", 500}}).Build();
    pods.push_back({nullptr, std::make_shared<const model::OwnedPod>(pod), nullptr});
    cache_->OnReplace(cluster::ResourceKind::kNodes, std::move(nodes));
    cache_->OnReplace(cluster::ResourceKind::kPods, std::move(pods));
    ASSERT_TRUE(cache_->Synced());
    Make(cache_.get());
  }

  void Make(cluster::ClusterCache* cache) {
    auto built = schedext::testing::MakeTestService(
        {.config_yaml = kProfiles,
         .cache = cache,
         .binder = &binder_,
         .register_more = [](policy::Registry& registry) {
           return registry.Register(
               "Slot",
               [](const json&, const policy::PolicyContext&)
                   -> StatusOr<std::unique_ptr<policy::Policy>> {
                 return std::unique_ptr<policy::Policy>(new SlotPolicy());
               });
         }});
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    ASSERT_TRUE(built->service->profile(0).has_reservers());
    service_ = std::move(built->service);
    metrics_ = std::move(built->metrics);
  }

  // The Error of a bind reply ("" on success).
  std::string Bind(std::string_view profile, std::string_view name, std::string_view uid,
                   std::string_view node) {
    wire::RequestBuffer body =
        wire::RequestBuffer::CopyOf(testing::BindingArgsJson(name, "default", uid, node));
    const int index = service_->FindProfile(profile);
    EXPECT_GE(index, 0);
    const int status =
        service_->Handle(Verb::kBind, static_cast<size_t>(index), body, scratch_, out_, summary_);
    EXPECT_EQ(status, 200) << out_;
    return json::parse(out_)["Error"].get<std::string>();
  }

  bool Assumed() const { return cache_->snapshot()->IsAssumed(kUid); }
  int64_t PodsOn(std::string_view node) const {
    const auto snapshot = cache_->snapshot();
    const model::NodeUsage* usage = snapshot->FindUsage(node);
    return usage != nullptr ? usage->pods : 0;
  }

  CallLog log_;
  FakeBinder binder_{log_};
  std::unique_ptr<cluster::ClusterCache> cache_;
  std::unique_ptr<Metrics> metrics_;  // the service counts into it
  std::unique_ptr<ExtenderService> service_;
  Scratch scratch_;
  std::string out_;
  RequestSummary summary_;
};

TEST_F(ServiceBindTest, WritesTheAnnotationsWithTheBindingAndReservesWithThem) {
  // While the Binding is being created, the cache already counts the pod on
  // n1 with the annotations it was reserved with.
  bool checked = false;
  binder_.during_bind = [&] {
    const auto snapshot = cache_->snapshot();
    const model::PodInfo* pod = snapshot->FindPod(kUid);
    ASSERT_NE(pod, nullptr);
    EXPECT_TRUE(snapshot->IsAssumed(kUid));
    EXPECT_EQ(pod->node_name, "n1");
    EXPECT_EQ(pod->annotations.Find("example.com/slot"), "n1");
    EXPECT_EQ(pod->annotations.Find("example.com/pod"), "web-1");
    checked = true;
  };
  EXPECT_EQ(Bind("slot", "web-1", kUid, "n1"), "");
  EXPECT_TRUE(checked);
  EXPECT_EQ(log_.calls,
            (std::vector<std::string>{"bind default/web-1 uid=uid-web-1 -> n1 example.com/slot=n1 "
                                      "example.com/pod=web-1"}));
  // Bound: the reservation waits for the watch (TTL running), counted once.
  EXPECT_TRUE(Assumed());
  EXPECT_EQ(PodsOn("n1"), 1);

  // A retry of a finished bind does not annotate again (the device stays as
  // chosen): it only binds, and the binder treats "already there" as success.
  log_.calls.clear();
  EXPECT_EQ(Bind("slot", "web-1", kUid, "n1"), "");
  EXPECT_EQ(log_.calls, (std::vector<std::string>{"bind default/web-1 uid=uid-web-1 -> n1"}));
  EXPECT_EQ(PodsOn("n1"), 1);
}

TEST_F(ServiceBindTest, AFailedBindReleasesTheReservation) {
  binder_.answer = FailedPreconditionError("404 Not Found: pods \"web-1\" not found");
  EXPECT_EQ(Bind("slot", "web-1", kUid, "n1"),
            "bind default/web-1 to n1: 404 Not Found: pods \"web-1\" not found");
  EXPECT_EQ(log_.calls.size(), 1u);
  EXPECT_FALSE(Assumed());
  EXPECT_EQ(PodsOn("n1"), 0);

  // Nothing is left behind: the next attempt starts afresh, annotations too.
  log_.calls.clear();
  binder_.answer = OkStatus();
  EXPECT_EQ(Bind("slot", "web-1", kUid, "n1"), "");
  EXPECT_EQ(log_.calls,
            (std::vector<std::string>{"bind default/web-1 uid=uid-web-1 -> n1 example.com/slot=n1 "
                                      "example.com/pod=web-1"}));
}

TEST_F(ServiceBindTest, TheListenersDeadlineReachesTheBinder) {
  scratch_.bind_not_after = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  EXPECT_EQ(Bind("slot", "web-1", kUid, "n1"), "");
  EXPECT_EQ(binder_.not_after, scratch_.bind_not_after);
}

TEST_F(ServiceBindTest, ABindPastTheListenersDeadlineIsRefusedUnsent) {
  scratch_.bind_not_after = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
  EXPECT_EQ(Bind("slot", "web-1", kUid, "n1"),
            "bind default/web-1 to n1: " + std::string(pipeline::kTooLate));
  EXPECT_TRUE(log_.calls.empty());
  EXPECT_FALSE(Assumed());
  EXPECT_EQ(PodsOn("n1"), 0);
}

TEST_F(ServiceBindTest, ATimedOutBindKeepsTheReservation) {
  binder_.answer = DeadlineExceededError("timeout after 5s (POST https://api/binding)");
  EXPECT_EQ(Bind("slot", "web-1", kUid, "n1"),
            "bind default/web-1 to n1: timeout after 5s (POST https://api/binding)");
  // The Binding may exist.
  EXPECT_EQ(log_.calls.size(), 1u);
  EXPECT_TRUE(Assumed());
  EXPECT_EQ(PodsOn("n1"), 1);

  // The scheduler's retry binds without annotating again.
  log_.calls.clear();
  binder_.answer = OkStatus();
  EXPECT_EQ(Bind("slot", "web-1", kUid, "n1"), "");
  EXPECT_EQ(log_.calls, (std::vector<std::string>{"bind default/web-1 uid=uid-web-1 -> n1"}));
  EXPECT_EQ(PodsOn("n1"), 1);
}

TEST_F(ServiceBindTest, AReserveHookRefusalIsTheError) {
  EXPECT_EQ(Bind("slot", "web-1", kUid, "n2"),
            "bind default/web-1 to n2: the node no longer fits the pod (Slot: no free slot)");
  EXPECT_TRUE(log_.calls.empty());
  EXPECT_FALSE(Assumed());
}

TEST_F(ServiceBindTest, AReserverProfileDoesNotBindWithoutAReservation) {
  // The pod is not in the cache (yet).
  std::string error = Bind("slot", "web-9", "uid-web-9", "n1");
  EXPECT_NE(error.find("bind default/web-9 to n1: cannot reserve the pod in schedext's cache ("),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("the scheduler retries it"), std::string::npos) << error;
  // No PodUID.
  error = Bind("slot", "web-1", "", "n1");
  EXPECT_NE(error.find("the request has no PodUID"), std::string::npos) << error;
  EXPECT_TRUE(log_.calls.empty());

  // A profile without ReserveHooks still binds an unknown pod: the watch will
  // count it.
  EXPECT_EQ(Bind("plain", "web-9", "uid-web-9", "n1"), "");
  EXPECT_EQ(log_.calls, (std::vector<std::string>{"bind default/web-9 uid=uid-web-9 -> n1"}));
}

TEST_F(ServiceBindTest, WithoutACacheAReserverProfileAnswersAnError) {
  Make(nullptr);
  const std::string error = Bind("slot", "web-1", kUid, "n1");
  EXPECT_NE(error.find("cannot reserve the pod in schedext's cache (schedext has no cluster "
                       "cache)"),
            std::string::npos)
      << error;
  EXPECT_TRUE(log_.calls.empty());
}

}  // namespace
}  // namespace schedext::server
