// UnschedulableNote's text, and PendingEventWriter as the service's observer:
// what it enqueues, the bound of its queue, and the Event and series it hands
// to the recorder (over a recording KubeClient).
#include "schedext/explain/pending_events.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "explain/explain_fixture.h"
#include "schedext/server/service.h"

namespace schedext {
namespace {

using namespace explain_testing;  // NOLINT: test vocabulary
using policy::Verdict;
using schedext::testing::ExtenderArgsNamesJson;
using std::chrono::seconds;

pipeline::ExplainedNode Rejected(
    std::vector<std::tuple<std::string_view, Verdict::Code, std::string, std::string>> verdicts) {
  pipeline::ExplainedNode n;
  for (auto& [policy, code, reason, detail] : verdicts) {
    n.filters.push_back({policy, code, reason, detail});
    if (n.decisive < 0 && code != Verdict::Code::kSuccess) {
      n.decisive = static_cast<int>(n.filters.size()) - 1;
      n.code = code;
    }
  }
  return n;
}

constexpr Verdict::Code kPass = Verdict::Code::kSuccess;
constexpr Verdict::Code kNo = Verdict::Code::kUnschedulable;
constexpr Verdict::Code kNever = Verdict::Code::kUnschedulableAndUnresolvable;
const std::string kGpuReason = "Insufficient aliyun.com/gpu-mem on any one GPU";

std::string Gpu(int free) {
  return "needs 8 GiB on one GPU; largest free " + std::to_string(free) + " GiB, short by " +
         std::to_string(8 - free) + " GiB";
}

TEST(UnschedulableNoteTest, NearestFirstThenTheRestCountedByPolicy) {
  pipeline::Explanation ex;
  // Fewest rejecting policies first; among GpuShare rejections the smallest
  // shortfall; an unresolvable rejection after a plain one.
  ex.nodes.push_back(Rejected({{"NodeHealth", kNever, "node(s) were not ready", ""},
                               {"GpuShare", kNo, kGpuReason, Gpu(7)}}));               // a
  ex.nodes.push_back(Rejected({{"NodeHealth", kPass, "", ""}, {"GpuShare", kNo, kGpuReason, Gpu(4)}}));  // b
  ex.nodes.push_back(Rejected({{"NodeHealth", kPass, "", ""}, {"GpuShare", kNo, kGpuReason, Gpu(6)}}));  // c
  ex.nodes.push_back(Rejected({{"NodeHealth", kNever, "node(s) were not ready", ""},
                               {"GpuShare", kPass, "", ""}}));                         // d
  ex.nodes.push_back(Rejected({{"NodeHealth", kPass, "", ""}, {"GpuShare", kNo, kGpuReason, Gpu(2)}}));  // e
  const std::vector<std::string_view> names = {"a", "b", "c", "d", "e"};
  EXPECT_EQ(explain::UnschedulableNote("gpu", names, ex, /*unknown=*/1),
            "0/6 nodes fit profile gpu. Nearest: c (GpuShare: " + Gpu(6) + "), b (GpuShare: " +
                Gpu(4) + "), e (GpuShare: " + Gpu(2) +
                "). 3 more nodes rejected: NodeHealth 2, unknown to schedext 1.");
  EXPECT_EQ(explain::UnschedulableNote("gpu", names, ex, 0, 1),
            "0/5 nodes fit profile gpu. Nearest: c (GpuShare: " + Gpu(6) +
                "). 4 more nodes rejected: NodeHealth 2, GpuShare 2.");
  // A node rejected by two policies lists both; no detail: the reason.
  pipeline::Explanation one;
  one.nodes.push_back(ex.nodes[0]);
  EXPECT_EQ(explain::UnschedulableNote("gpu", std::span(names).subspan(0, 1), one, 0),
            "0/1 nodes fit profile gpu. Nearest: a (NodeHealth: node(s) were not ready; "
            "GpuShare: " + Gpu(7) + ").");
}

// NodeResourcesFit's shortfalls compare per resource: the smaller CPU
// shortfall first, and a node short of 1 byte of memory is not "nearer" than
// nodes short of CPU (the resources' groups keep a fixed order).
TEST(UnschedulableNoteTest, ResourceShortfallsCompareWithinOneResource) {
  auto fit = [](std::string detail) {
    return Rejected({{"NodeResourcesFit", kNo, "Insufficient", std::move(detail)}});
  };
  pipeline::Explanation ex;
  ex.nodes.push_back(fit("memory: requested 6, free 5 of 20 allocatable, short by 1"));  // m
  ex.nodes.push_back(fit("cpu: requested 4000m, free 1000m of 4000m allocatable, short by 3000m"));
  ex.nodes.push_back(fit("cpu: requested 4000m, free 3000m of 4000m allocatable, short by 1000m"));
  const std::vector<std::string_view> names = {"m", "x", "y"};
  const std::string note = explain::UnschedulableNote("all", names, ex, 0);
  const size_t m = note.find("m (");
  const size_t x = note.find("x (");
  const size_t y = note.find("y (");
  ASSERT_NE(m, std::string::npos) << note;
  EXPECT_LT(y, x) << note;
  EXPECT_LT(x, m) << note;
}

TEST(UnschedulableNoteTest, NothingWhenANodeFitsNow) {
  pipeline::Explanation ex;
  ex.nodes.push_back(Rejected({{"GpuShare", kNo, kGpuReason, Gpu(6)}}));
  ex.nodes.push_back(Rejected({{"GpuShare", kPass, "", ""}}));
  const std::vector<std::string_view> names = {"a", "b"};
  EXPECT_EQ(explain::UnschedulableNote("gpu", names, ex, 0), "");
}

TEST(UnschedulableNoteTest, StaysWithinTheEventsApiLimit) {
  pipeline::Explanation ex;
  std::vector<std::string> storage;
  for (int i = 0; i < 5000; ++i) {
    ex.nodes.push_back(Rejected({{"NodeNumeric", kNo, "node(s) over the numeric limit",
                                  std::string(300, 'x') + std::to_string(i)}}));
    storage.push_back("node-" + std::to_string(i));
  }
  const std::vector<std::string_view> names(storage.begin(), storage.end());
  const std::string note = explain::UnschedulableNote("p", names, ex, 0, 10);
  EXPECT_LE(note.size(), cluster::kEventNoteLimit);
  // Two nodes' text fit, not three; the rest are counted.
  EXPECT_NE(note.find("Nearest: node-0 ("), std::string::npos) << note;
  EXPECT_NE(note.find("), node-1 ("), std::string::npos) << note;
  EXPECT_EQ(note.find("node-2 ("), std::string::npos) << note;
  EXPECT_NE(note.find(" 4998 more nodes rejected: NodeNumeric 4998."), std::string::npos) << note;
}

// Records every write; answers 201 / 200.
class RecordingClient final : public cluster::KubeClient {
 public:
  struct Call {
    std::string method, path, body;
  };
  StatusOr<cluster::HttpResult> Get(std::string_view) override {
    return cluster::HttpResult{404, "{}"};
  }
  StatusOr<cluster::HttpResult> Post(std::string_view path, std::string_view body) override {
    calls.push_back({"POST", std::string(path), std::string(body)});
    return cluster::HttpResult{201, "{}"};
  }
  StatusOr<cluster::HttpResult> Patch(std::string_view path, std::string_view body,
                                      std::string_view) override {
    calls.push_back({"PATCH", std::string(path), std::string(body)});
    return cluster::HttpResult{200, "{}"};
  }
  Status Watch(std::string_view, const std::function<bool(std::string_view)>&) override {
    return OkStatus();
  }
  void CancelWatches() override {}
  std::vector<Call> calls;
};

class PendingEventWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = CacheWith(Nodes(), {BoundPod()});
    profiles_ = BuildProfiles(kConfig);
    ASSERT_EQ(profiles_.size(), 2U);
    service_ =
        std::make_unique<server::ExtenderService>(profiles_, 0, cache_.get(), nullptr, nullptr);
  }

  std::unique_ptr<explain::PendingEventWriter> Writer(size_t queue_size) {
    explain::PendingEventOptions options;
    options.queue_size = queue_size;
    options.profiles = {profiles_[0].get()};
    options.now = [this] { return now_; };
    return std::make_unique<explain::PendingEventWriter>(recorder_, std::move(options));
  }

  int Filter(std::string_view pod_json, size_t profile = 0) {
    wire::RequestBuffer body =
        wire::RequestBuffer::CopyOf(ExtenderArgsNamesJson(pod_json, {"n1", "n2", "n3", "n4"}));
    server::RequestSummary summary;
    return service_->Handle(server::Verb::kFilter, profile, body, scratch_, out_, summary);
  }

  // 40 cpus: more than any node has.
  static std::string HugePod() {
    PodJson pod("huge");
    pod.Namespace("shop").Uid("uid-1").Request("cpu", "40");
    return pod.Build();
  }

  std::unique_ptr<cluster::ClusterCache> cache_;
  std::vector<std::shared_ptr<const pipeline::Profile>> profiles_;
  std::unique_ptr<server::ExtenderService> service_;
  server::Scratch scratch_;
  std::string out_;
  RecordingClient client_;
  cluster::EventRecorder recorder_{client_, [] {
                                     cluster::EventRecorderOptions o;
                                     o.reporting_instance = "schedext-0";
                                     o.update_interval = std::chrono::seconds(10);
                                     return o;
                                   }()};
  cluster::EventRecorder::WallTime now_ = cluster::EventRecorder::WallTime(seconds(1'800'000'000));
};

TEST_F(PendingEventWriterTest, ARejectionOnEveryNodeBecomesOneEventAndItsSeries) {
  auto writer = Writer(8);
  service_->SetObserver(writer.get());
  // A pod that fits somewhere, another profile, a full reply: nothing queued.
  ASSERT_EQ(Filter(Pod().Build()), 200) << out_;
  ASSERT_EQ(Filter(HugePod(), 1), 200) << out_;
  EXPECT_EQ(writer->queued(), 0u);

  ASSERT_EQ(Filter(HugePod()), 200) << out_;
  ASSERT_EQ(writer->queued(), 1u);
  writer->DrainForTest();
  ASSERT_EQ(client_.calls.size(), 1u);
  EXPECT_EQ(client_.calls[0].method, "POST");
  EXPECT_EQ(client_.calls[0].path, "/apis/events.k8s.io/v1/namespaces/shop/events");
  const nlohmann::json event = nlohmann::json::parse(client_.calls[0].body);
  EXPECT_EQ(event["note"],
            "0/4 nodes fit profile all. Nearest: n1 (NodeResourcesFit: cpu: requested 40000m, "
            "free 4000m of 4000m allocatable, short by 36000m), n2 (NodeResourcesFit: cpu: "
            "requested 40000m, free 3000m of 4000m allocatable, short by 37000m), n4 (NodeHealth: "
            "node(s) were not ready; NodeLabel: node(s) had forbidden labels; NodeResourcesFit: "
            "cpu: requested 40000m, free 4000m of 4000m allocatable, short by 36000m). 1 more "
            "node rejected: TaintToleration 1.")
      << event.dump();
  EXPECT_EQ(event["regarding"]["uid"], "uid-1");

  // Retries within the interval are counted; the next one after it sends
  // the series; the writer's periodic flush sends what is left.
  for (int i = 0; i < 3; ++i) {
    now_ += seconds(1);
    ASSERT_EQ(Filter(HugePod()), 200);
  }
  writer->DrainForTest();
  EXPECT_EQ(client_.calls.size(), 1u);
  now_ += seconds(10);
  writer->DrainForTest();
  ASSERT_EQ(client_.calls.size(), 2u);
  EXPECT_EQ(client_.calls[1].method, "PATCH");
  EXPECT_EQ(client_.calls[1].body,
            R"({"series":{"count":4,"lastObservedTime":"2027-01-15T08:00:03.000000Z"}})");
  std::string metrics;
  writer->AppendMetrics(metrics);
  EXPECT_NE(metrics.find("schedext_events_written_total{op=\"create\"} 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("schedext_events_written_total{op=\"update\"} 1\n"), std::string::npos);
  service_->SetObserver(nullptr);
}

// A preempt reply that drops a candidate becomes a SchedextPreemption Event,
// a series of its own beside the pod's SchedextUnschedulable one; a reply
// that keeps the scheduler's proposal queues nothing.
TEST_F(PendingEventWriterTest, APreemptionThatDropsANodeBecomesItsOwnEvent) {
  auto writer = Writer(8);
  service_->SetObserver(writer.get());
  PodJson huge("huge");
  huge.Namespace("shop").Uid("uid-1").Request("cpu", "3500m");  // n2 needs db-1 gone
  auto preempt = [&](const std::vector<schedext::testing::VictimsJson>& victims) {
    wire::RequestBuffer body = wire::RequestBuffer::CopyOf(schedext::testing::PreemptionArgsJson(
        huge, victims, schedext::testing::ArgsShape::kNodeNames));
    server::RequestSummary summary;
    return service_->Handle(server::Verb::kPreempt, 0, body, scratch_, out_, summary);
  };
  ASSERT_EQ(preempt({{"n1", {}}, {"n2", {BoundPod()}}}), 200) << out_;
  EXPECT_EQ(writer->queued(), 0u);  // kept as proposed

  ASSERT_EQ(Filter(HugePod()), 200);
  ASSERT_EQ(preempt({{"n2", {BoundPod()}}, {"n4", {}}}), 200) << out_;
  ASSERT_EQ(writer->queued(), 2u);
  writer->DrainForTest();
  ASSERT_EQ(client_.calls.size(), 2u);
  const nlohmann::json event = nlohmann::json::parse(client_.calls[1].body);
  EXPECT_EQ(event["reason"], "SchedextPreemption");
  EXPECT_EQ(event["type"], "Normal");
  EXPECT_EQ(event["regarding"]["name"], "huge");
  EXPECT_EQ(event["note"],
            "Preemption by profile all: kept 1 of 2 candidate nodes. n4: dropped: NodeHealth: "
            "node(s) were not ready (eviction cannot change that).")
      << event.dump();
  EXPECT_EQ(nlohmann::json::parse(client_.calls[0].body)["reason"], "SchedextUnschedulable");

  // The same preemption again within the interval counts into its series.
  now_ += seconds(1);
  ASSERT_EQ(preempt({{"n2", {BoundPod()}}, {"n4", {}}}), 200) << out_;
  writer->DrainForTest();
  EXPECT_EQ(client_.calls.size(), 2u);
  service_->SetObserver(nullptr);
}

TEST_F(PendingEventWriterTest, AFullQueueDropsAndCountsWithoutWaiting) {
  auto writer = Writer(2);
  service_->SetObserver(writer.get());
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Filter(HugePod()), 200);
  EXPECT_EQ(writer->queued(), 2u);
  EXPECT_EQ(writer->dropped(explain::EventDrop::kQueueFull), 3u);
  std::string metrics;
  writer->AppendMetrics(metrics);
  EXPECT_NE(metrics.find("schedext_events_dropped_total{reason=\"queue_full\"} 3\n"),
            std::string::npos)
      << metrics;
  writer->DrainForTest();
  EXPECT_EQ(client_.calls.size(), 1u);  // both jobs: one pod, one Event
  service_->SetObserver(nullptr);
}

TEST_F(PendingEventWriterTest, AFollowerWritesNothing) {
  explain::PendingEventOptions options;
  options.profiles = {profiles_[0].get()};
  options.may_write = [] { return false; };
  explain::PendingEventWriter writer(recorder_, std::move(options));
  service_->SetObserver(&writer);
  ASSERT_EQ(Filter(HugePod()), 200);
  EXPECT_EQ(writer.queued(), 0u);
  EXPECT_EQ(writer.dropped(explain::EventDrop::kNotLeader), 1u);
  service_->SetObserver(nullptr);
}

TEST_F(PendingEventWriterTest, TheThreadWritesWhatTheFilterQueued) {
  auto writer = Writer(8);
  service_->SetObserver(writer.get());
  writer->Start();
  ASSERT_EQ(Filter(HugePod()), 200);
  for (int i = 0; i < 500 && writer->queued() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  writer->Stop();
  EXPECT_EQ(client_.calls.size(), 1u);
  service_->SetObserver(nullptr);
}

}  // namespace
}  // namespace schedext
