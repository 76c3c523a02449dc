#include "schedext/policy/policy_host.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace schedext::policy {
namespace {

// Records the calls it gets into a log shared by every task of a test.
class RecordingTask final : public BackgroundTask {
 public:
  RecordingTask(std::string name, std::vector<std::string>& log, bool fail = false)
      : name_(std::move(name)), log_(log), fail_(fail) {}
  std::string_view Name() const override { return name_; }
  Status Start() override {
    log_.push_back("start " + name_);
    return fail_ ? UnavailableError("cannot start") : OkStatus();
  }
  void Stop() override { log_.push_back("stop " + name_); }

 private:
  std::string name_;
  std::vector<std::string>& log_;
  bool fail_;
};

class CountingAccounting final : public NodeAccounting {
 public:
  bool Counts(const model::PodInfo& /*pod*/) const override { return true; }
  std::shared_ptr<const model::NodeState> AddPod(std::string_view /*node*/,
                                                 std::shared_ptr<const model::NodeState> state,
                                                 const model::PodInfo& /*pod*/,
                                                 int /*sign*/) const override {
    return state;
  }
};

class NullWatchHandler final : public WatchHandler {
 public:
  void OnReplace(std::span<const wire::RawObject> /*objects*/,
                 NodeRefresher& /*refresh*/) override {}
  void OnUpsert(const wire::RawObject& /*object*/, NodeRefresher& /*refresh*/) override {}
  void OnDelete(const wire::RawObject& /*object*/, NodeRefresher& /*refresh*/) override {}
};

int Answer(std::string_view rest, std::string& body) {
  body = "{\"rest\":\"" + std::string(rest) + "\"}";
  return 200;
}

TEST(PolicyHostTest, AccountingsGetConsecutiveSlots) {
  PolicyHost host;
  StatusOr<NodeStateSlot> first = host.AddNodeAccounting(std::make_shared<CountingAccounting>());
  StatusOr<NodeStateSlot> second = host.AddNodeAccounting(std::make_shared<CountingAccounting>());
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, 0U);
  EXPECT_EQ(*second, 1U);
  EXPECT_EQ(host.accountings().size(), 2U);
  EXPECT_FALSE(host.AddNodeAccounting(nullptr).ok());
}

TEST(PolicyHostTest, RoutesAreValidatedAndUnique) {
  PolicyHost host;
  EXPECT_TRUE(host.AddGetRoute("/gpushare/inspect", Answer).ok());
  const struct {
    const char* path;
    const char* why;
  } cases[] = {
      {"/gpushare/inspect", "registered twice"},
      {"/metrics", "taken by schedext"},
      {"/readyz", "taken by schedext"},
      {"gpushare", "must be"},
      {"/a/", "must be"},
      {"/a//b", "must be"},
      {"/a b", "must be"},
      {"/", "must be"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path);
    const Status s = host.AddGetRoute(c.path, Answer);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(c.why), std::string::npos) << s.message();
  }
  ASSERT_EQ(host.routes().size(), 1U);
  std::string body;
  EXPECT_EQ(host.routes()[0].handler("node-1", body), 200);
  EXPECT_EQ(body, "{\"rest\":\"node-1\"}");
}

TEST(PolicyHostTest, WatchSpecsAreValidated) {
  PolicyHost host;
  auto handler = std::make_shared<NullWatchHandler>();
  EXPECT_TRUE(host.Watch({"", "v1", "configmaps", "kube-system", "app=gpu", ""}, handler).ok());
  EXPECT_TRUE(host.Watch({"", "v1", "configmaps", "", "", "metadata.name=x"}, handler).ok());
  EXPECT_FALSE(host.Watch({"", "v1", "configmaps", "Kube_System", "", ""}, handler).ok());
  EXPECT_FALSE(host.Watch({"", "v1", "configmaps", "-a", "", ""}, handler).ok());
  EXPECT_FALSE(host.Watch({"", "v1", "configmaps", "a", "x\ny", ""}, handler).ok());
  EXPECT_FALSE(host.Watch({"", "v1", "configmaps", "a", "", ""}, nullptr).ok());
  // Any group/version/resource: a CRD's, a named group's.
  EXPECT_TRUE(host.Watch({"example.com", "v1", "widgets", "team-a", "", ""}, handler).ok());
  EXPECT_TRUE(host.Watch({"resource.k8s.io", "v1beta1", "resourceslices", "", "", ""}, handler)
                  .ok());
  EXPECT_FALSE(host.Watch({"Example.com", "v1", "widgets", "", "", ""}, handler).ok());
  EXPECT_FALSE(host.Watch({"example..com", "v1", "widgets", "", "", ""}, handler).ok());
  EXPECT_FALSE(host.Watch({"example.com.", "v1", "widgets", "", "", ""}, handler).ok());
  EXPECT_FALSE(host.Watch({"example.com", "", "widgets", "", "", ""}, handler).ok());
  EXPECT_FALSE(host.Watch({"example.com", "v1", "", "", "", ""}, handler).ok());
  EXPECT_FALSE(host.Watch({"example.com", "v1", "widgets/x", "", "", ""}, handler).ok());
  ASSERT_EQ(host.watches().size(), 4U);
  EXPECT_EQ(host.watches()[0].spec.namespace_name, "kube-system");
  EXPECT_EQ(host.watches()[1].spec.field_selector, "metadata.name=x");
}

TEST(PolicyHostTest, ReadinessNamesTheFirstFailingCondition) {
  PolicyHost host;
  EXPECT_EQ(host.NotReady(), "");
  bool a = false;
  bool b = false;
  host.AddReadiness("A: synced", [&a] { return a; });
  host.AddReadiness("B: first sample", [&b] { return b; });
  EXPECT_EQ(host.NotReady(), "A: synced");
  a = true;
  EXPECT_EQ(host.NotReady(), "B: first sample");
  b = true;
  EXPECT_EQ(host.NotReady(), "");
}

TEST(PolicyHostTest, BackgroundTasksStartInOrderAndStopInReverse) {
  std::vector<std::string> log;
  {
    PolicyHost host;
    host.AddBackgroundTask(std::make_unique<RecordingTask>("a", log));
    host.AddBackgroundTask(std::make_unique<RecordingTask>("b", log));
    ASSERT_TRUE(host.StartBackground().ok());
    host.StopBackground();
    EXPECT_EQ(log, (std::vector<std::string>{"start a", "start b", "stop b", "stop a"}));
    log.clear();
  }
  // The destructor stops them again (Stop is idempotent by contract).
  EXPECT_EQ(log, (std::vector<std::string>{"stop b", "stop a"}));
}

TEST(PolicyHostTest, AFailedStartStopsEveryTaskAndNamesTheOne) {
  std::vector<std::string> log;
  PolicyHost host;
  host.AddBackgroundTask(std::make_unique<RecordingTask>("a", log));
  host.AddBackgroundTask(std::make_unique<RecordingTask>("b", log, /*fail=*/true));
  host.AddBackgroundTask(std::make_unique<RecordingTask>("c", log));
  const Status s = host.StartBackground();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("b"), std::string::npos) << s.message();
  EXPECT_EQ(log, (std::vector<std::string>{"start a", "start b", "stop c", "stop b", "stop a"}));
}

TEST(PolicyHostTest, MetricsAndObserversAreCalledInRegistrationOrder) {
  PolicyHost host;
  EXPECT_FALSE(host.has_metrics());
  host.AddMetrics([](std::string& out) { out += "one\n"; });
  host.AddMetrics([](std::string& out) { out += "two\n"; });
  std::string out;
  host.WriteMetrics(out);
  EXPECT_EQ(out, "one\ntwo\n");

  std::vector<std::string> bound;
  host.OnPodBound([&](const model::PodInfo& pod, std::string_view node) {
    bound.push_back(std::string(pod.name) + "@" + std::string(node));
  });
  model::PodInfo pod;
  pod.name = "p";
  host.NotifyPodBound(pod, "n1");
  EXPECT_EQ(bound, std::vector<std::string>{"p@n1"});
}

TEST(PolicyHostTest, SnapshotIsNullUntilAttached) {
  PolicyHost host;
  EXPECT_EQ(host.Snapshot(), nullptr);
  int calls = 0;
  host.AttachCluster([&calls]() -> std::shared_ptr<const ClusterView> {
    ++calls;
    return nullptr;
  });
  EXPECT_EQ(host.Snapshot(), nullptr);
  EXPECT_EQ(calls, 1);
}

TEST(PolicyHostTest, SharedMakesOneObjectPerKey) {
  PolicyHost host;
  int made = 0;
  auto make = [&made]() -> StatusOr<std::shared_ptr<int>> {
    ++made;
    return std::make_shared<int>(made);
  };
  StatusOr<std::shared_ptr<int>> a = host.Shared<int>("GpuShare", make);
  StatusOr<std::shared_ptr<int>> b = host.Shared<int>("GpuShare", make);
  StatusOr<std::shared_ptr<int>> c = host.Shared<int>("Other", make);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_NE(a->get(), c->get());
  EXPECT_EQ(made, 2);
  // A failed make is not kept: the next call tries again.
  StatusOr<std::shared_ptr<int>> failed = host.Shared<int>(
      "Failing", []() -> StatusOr<std::shared_ptr<int>> { return InternalError("no"); });
  EXPECT_FALSE(failed.ok());
  StatusOr<std::shared_ptr<int>> retried = host.Shared<int>("Failing", make);
  ASSERT_TRUE(retried.ok());
  EXPECT_EQ(**retried, 3);
}

TEST(PolicyHostTest, ClusterRequirementsAreDeduplicated) {
  PolicyHost host;
  EXPECT_TRUE(host.cluster_requirements().empty());
  host.RequireCluster("GpuShare counts GPU memory from the pods");
  host.RequireCluster("GpuShare counts GPU memory from the pods");
  host.RequireCluster("NodeLoad");
  EXPECT_EQ(host.cluster_requirements().size(), 2U);
}

}  // namespace
}  // namespace schedext::policy
