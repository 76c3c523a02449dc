// NodeLoad through the Policy interface, over fixed load snapshots and a fake
// clock: Trimaran's scores, neutral scores for missing or stale data, recent
// binds counted, the hot-node filter; and the poller against a fake
// Prometheus on loopback.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <functional>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "policy/builtin/nodeload/bind_ledger.h"
#include "policy/builtin/nodeload/load_poller.h"
#include "policy/builtin/nodeload/nodeload.h"
#include "schedext/policy/handle.h"
#include "schedext/policy/policy.h"
#include "testing/model_builders.h"

namespace schedext::policy::nodeload {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using test::NodeBuilder;
using test::PodBuilder;
using test::TestArena;

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kMiB = int64_t{1} << 20;

// A policy over a snapshot and clock the test sets.
struct Harness {
  explicit Harness(const std::string& args) {
    PolicyContext context;
    StatusOr<NodeLoadSpec> parsed = ParseNodeLoadArgs(json::parse(args), context);
    EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
    spec = *parsed;
    ledger = std::make_shared<BindLedger>(seconds(600), [this] {
      std::lock_guard<std::mutex> lock(mu);
      return now;
    });
    LoadSources sources;
    sources.snapshot = [this] {
      std::lock_guard<std::mutex> lock(mu);
      return snapshot;
    };
    sources.now = [this] {
      std::lock_guard<std::mutex> lock(mu);
      return now;
    };
    policy = MakeNodeLoad(spec, std::move(sources), ledger, nullptr);
  }
  void Publish(std::vector<std::pair<std::string, NodeLoadSample>> nodes) {
    std::lock_guard<std::mutex> lock(mu);
    snapshot = std::make_shared<const LoadSnapshot>(std::move(nodes), now);
  }
  void Advance(Clock::duration d) {
    std::lock_guard<std::mutex> lock(mu);
    now += d;
  }
  // Score then Normalize of `nodes` for `pod`, as the profile runs them.
  std::vector<int64_t> Scores(const model::PodInfo& pod,
                              const std::vector<model::NodeInfo>& nodes) const {
    const ScoreHook* scorer = policy->AsScorer();
    std::vector<const model::NodeInfo*> pointers;
    for (const model::NodeInfo& n : nodes) pointers.push_back(&n);
    RequestState state;
    EXPECT_TRUE(scorer->PreScore(state, pod, pointers).ok());
    std::vector<int64_t> out;
    for (const model::NodeInfo& n : nodes) out.push_back(scorer->Score(state, pod, n));
    scorer->Normalize(state, out);
    return out;
  }
  std::vector<std::string> Filter(const model::PodInfo& pod,
                                  const std::vector<model::NodeInfo>& nodes) const {
    const FilterHook* filter = policy->AsFilter();
    RequestState state;
    EXPECT_TRUE(filter->PreFilter(state, pod).ok());
    std::vector<std::string> out;
    for (const model::NodeInfo& n : nodes) {
      Verdict v = filter->Filter(state, pod, n);
      out.push_back(v.ok() ? "ok" : std::string(v.reason));
    }
    return out;
  }
  // Filter's Detail per node, after the same PreFilter.
  std::vector<std::string> Details(const model::PodInfo& pod,
                                   const std::vector<model::NodeInfo>& nodes) const {
    const FilterHook* filter = policy->AsFilter();
    RequestState state;
    EXPECT_TRUE(filter->PreFilter(state, pod).ok());
    std::vector<std::string> out;
    for (const model::NodeInfo& n : nodes) {
      out.push_back(filter->Detail(state, pod, n));
    }
    return out;
  }

  NodeLoadSpec spec;
  std::shared_ptr<BindLedger> ledger;
  std::unique_ptr<Policy> policy;
  mutable std::mutex mu;
  std::shared_ptr<const LoadSnapshot> snapshot;
  Clock::time_point now = Clock::time_point() + std::chrono::hours(1);
};

NodeLoadSample Cpu(double cpu) {
  NodeLoadSample s;
  s.cpu = cpu;
  return s;
}

model::NodeInfo Node(TestArena& arena, std::string_view name, int64_t milli_cpu = 1000,
                     int64_t memory = kGiB) {
  return NodeBuilder(arena)
      .Name(name)
      .Capacity("cpu", milli_cpu)
      .Capacity("memory", memory)
      .Allocatable("cpu", milli_cpu)
      .Allocatable("memory", memory)
      .Build();
}

constexpr const char* kTlpArgs = R"({"prometheus":{"url":"http://127.0.0.1:1"},
    "pollIntervalSeconds":1,"maxAgeSeconds":5,"bindSettleSeconds":10})";

TEST(NodeLoadPolicyTest, TargetLoadPackingScoresAsTrimaran) {
  Harness h(kTlpArgs);
  TestArena arena;
  h.Publish({{"cold", Cpu(0)}, {"hot", Cpu(50)}, {"target", Cpu(40)}, {"over", Cpu(130)}});
  const std::vector<model::NodeInfo> nodes = {Node(arena, "cold"), Node(arena, "hot"),
                                              Node(arena, "target"), Node(arena, "over"),
                                              Node(arena, "unknown")};
  const model::PodInfo empty = PodBuilder(arena).Name("p").Build();
  // 40; 40 × 50 / 60 = 33; 100; over capacity 0; no data: neutral 50.
  EXPECT_EQ(h.Scores(empty, nodes), (std::vector<int64_t>{40, 33, 100, 0, 50}));
  // A pod predicting 200m (limit) adds 20 points on a 1000m node:
  // cold 20 % → 60 × 20 / 40 + 40 = 70; hot 70 % → 40 × 30 / 60 = 20;
  // target 60 % → 40 × 40 / 60 = 26.7 → 27.
  const model::PodInfo pod =
      PodBuilder(arena).Name("p").Container({{"cpu", 100}}, {{"cpu", 200}}).Build();
  EXPECT_EQ(h.Scores(pod, nodes), (std::vector<int64_t>{70, 20, 27, 0, 50}));
}

TEST(NodeLoadPolicyTest, StaleOrMissingDataIsNeutralAndNeverFilters) {
  Harness h(R"({"prometheus":{"url":"http://127.0.0.1:1"},"pollIntervalSeconds":1,
               "maxAgeSeconds":5,"neutralScore":30,"hotCpuPercent":80})");
  TestArena arena;
  const std::vector<model::NodeInfo> nodes = {Node(arena, "a"), Node(arena, "b")};
  const model::PodInfo pod = PodBuilder(arena).Name("p").Build();
  // No snapshot yet.
  EXPECT_EQ(h.Scores(pod, nodes), (std::vector<int64_t>{30, 30}));
  EXPECT_EQ(h.Filter(pod, nodes), (std::vector<std::string>{"ok", "ok"}));

  h.Publish({{"a", Cpu(95)}, {"b", Cpu(10)}});
  EXPECT_EQ(h.Scores(pod, nodes), (std::vector<int64_t>{3, 55}));  // 40 × 5 / 60; 60 × 10 / 40 + 40
  EXPECT_EQ(h.Filter(pod, nodes),
            (std::vector<std::string>{"node(s) were too hot: CPU use above 80%", "ok"}));

  h.Advance(seconds(5));  // exactly maxAge: still fresh
  EXPECT_EQ(h.Filter(pod, nodes)[0], "node(s) were too hot: CPU use above 80%");
  h.Advance(milliseconds(1));  // older than maxAge
  EXPECT_EQ(h.Scores(pod, nodes), (std::vector<int64_t>{30, 30}));
  EXPECT_EQ(h.Filter(pod, nodes), (std::vector<std::string>{"ok", "ok"}));
}

TEST(NodeLoadPolicyTest, RecentBindsCountUntilASettledSampleCoversThem) {
  Harness h(kTlpArgs);  // bindSettleSeconds 10
  TestArena arena;
  const std::vector<model::NodeInfo> nodes = {Node(arena, "a"), Node(arena, "b")};
  const model::PodInfo empty = PodBuilder(arena).Name("p").Build();
  h.Publish({{"a", Cpu(0)}, {"b", Cpu(0)}});
  EXPECT_EQ(h.Scores(empty, nodes), (std::vector<int64_t>{40, 40}));

  // Two pods of 200m bound to a just after the sample: 40 % → 100.
  const model::PodInfo bound =
      PodBuilder(arena).Name("q").Container({{"cpu", 200}}, {{"cpu", 200}}).Build();
  int64_t cpu = 0;
  int64_t memory = 0;
  PodEstimate(h.spec, bound, cpu, memory);
  EXPECT_EQ(cpu, 200);
  h.Advance(seconds(1));
  h.ledger->Add("a", "uid-1", cpu, memory, h.now);
  h.ledger->Add("a", "uid-2", cpu, memory, h.now);
  EXPECT_EQ(h.Scores(empty, nodes), (std::vector<int64_t>{100, 40}));
  // A retried bind of the same pod counts once; a failed one not at all.
  h.ledger->Add("a", "uid-2", cpu, memory, h.now);
  h.ledger->Remove("uid-1");
  EXPECT_EQ(h.Scores(empty, nodes), (std::vector<int64_t>{70, 40}));  // 20 %

  // A sample 5 s after the bind may not show the pod yet: it still counts...
  h.Advance(seconds(5));
  h.Publish({{"a", Cpu(0)}, {"b", Cpu(0)}});
  EXPECT_EQ(h.Scores(empty, nodes), (std::vector<int64_t>{70, 40}));
  // ...one taken bindSettleSeconds after it covers it (its 20 % are measured).
  h.Advance(seconds(5));
  h.Publish({{"a", Cpu(20)}, {"b", Cpu(0)}});
  EXPECT_EQ(h.Scores(empty, nodes), (std::vector<int64_t>{70, 40}));
  EXPECT_EQ(h.ledger->Current()->size(), 1u);
}

TEST(NodeLoadPolicyTest, HotMemoryFilterCountsRecentBinds) {
  Harness h(R"({"prometheus":{"url":"http://127.0.0.1:1"},"pollIntervalSeconds":1,
               "hotMemoryPercent":90})");
  TestArena arena;
  const std::vector<model::NodeInfo> nodes = {Node(arena, "a")};
  const model::PodInfo pod = PodBuilder(arena).Name("p").Build();
  NodeLoadSample sample;
  sample.memory = 80;
  h.Publish({{"a", sample}});
  EXPECT_EQ(h.Filter(pod, nodes), (std::vector<std::string>{"ok"}));
  h.ledger->Add("a", "uid-1", 0, 128 * kMiB, h.now);  // +12.5 % of 1 GiB
  EXPECT_EQ(h.Filter(pod, nodes),
            (std::vector<std::string>{"node(s) were too hot: memory use above 90%"}));
}

TEST(NodeLoadPolicyTest, NoFilterHookWithoutHotThresholds) {
  Harness h(kTlpArgs);
  EXPECT_EQ(h.policy->AsFilter(), nullptr);
  EXPECT_NE(h.policy->AsScorer(), nullptr);
  EXPECT_EQ(h.policy->Name(), "NodeLoad");
}

// TestScore of Trimaran's loadvariationriskbalancing_test.go through the
// policy: nodes of 1000m and 1 GiB.
TEST(NodeLoadPolicyTest, RiskBalancingScoresAsTrimaran) {
  Harness h(R"({"mode":"LoadVariationRiskBalancing","prometheus":{"url":"http://127.0.0.1:1"},
               "pollIntervalSeconds":1})");
  TestArena arena;
  auto sample = [](double cpu, double cpu_stddev, double memory, double memory_stddev) {
    NodeLoadSample s;
    s.cpu = cpu;
    s.cpu_stddev = cpu_stddev;
    s.memory = memory;
    s.memory_stddev = memory_stddev;
    return s;
  };
  h.Publish({{"new-node", sample(50, kNoData, kNoData, kNoData)},
             {"hot-node", sample(100, kNoData, kNoData, kNoData)},
             {"avg-and-stddev", sample(30, 16, kNoData, kNoData)},
             {"cpu-and-memory", sample(40, 16, 50, 10)},
             {"worst-case", sample(80, 20, 25, 15)}});
  const model::PodInfo empty = PodBuilder(arena).Name("p").Build();
  EXPECT_EQ(h.Scores(empty, {Node(arena, "new-node"), Node(arena, "hot-node")}),
            (std::vector<int64_t>{75, 50}));
  const model::PodInfo small = PodBuilder(arena)
                                   .Name("p")
                                   .InitContainer({{"cpu", 0}, {"memory", 0}})
                                   .Container({{"cpu", 200}, {"memory", 256 * kMiB}})
                                   .Build();
  EXPECT_EQ(h.Scores(small, {Node(arena, "avg-and-stddev")}), (std::vector<int64_t>{67}));
  const model::PodInfo pod =
      PodBuilder(arena).Name("p").Container({{"cpu", 100}, {"memory", 512 * kMiB}}).Build();
  EXPECT_EQ(h.Scores(pod, {Node(arena, "cpu-and-memory"), Node(arena, "worst-case"),
                           Node(arena, "no-data")}),
            (std::vector<int64_t>{45, 45, 50}));
}

// ---- LoadPoller against a fake Prometheus ----

class FakePrometheus {
 public:
  FakePrometheus() {
    server_.Post("/api/v1/query", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      const std::string query = req.get_param_value("query");
      auto it = replies_.find(query);
      if (it == replies_.end()) {
        res.status = 400;
        res.set_content(R"({"status":"error","errorType":"bad_data","error":"unknown"})",
                        "application/json");
        return;
      }
      res.set_content(it->second, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakePrometheus() {
    server_.stop();
    thread_.join();
  }
  void Answer(const std::string& query, std::string body) {
    std::lock_guard<std::mutex> lock(mu_);
    replies_[query] = std::move(body);
  }
  void Forget(const std::string& query) {
    std::lock_guard<std::mutex> lock(mu_);
    replies_.erase(query);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::map<std::string, std::string> replies_;
};

std::string Vector(const std::vector<std::pair<std::string, std::string>>& series) {
  std::string out = R"({"status":"success","data":{"resultType":"vector","result":[)";
  for (size_t i = 0; i < series.size(); ++i) {
    if (i > 0) out += ",";
    out += R"({"metric":{"instance":")" + series[i].first + R"("},"value":[1.5,")" +
           series[i].second + R"("]})";
  }
  return out + "]}}";
}

std::unique_ptr<LoadPoller> MakePoller(const std::string& url, LoadQueries queries) {
  PrometheusEndpoint endpoint;
  endpoint.url = url;
  endpoint.timeout = milliseconds(5000);
  StatusOr<std::unique_ptr<PrometheusClient>> client = PrometheusClient::Make(endpoint);
  EXPECT_TRUE(client.ok());
  return std::make_unique<LoadPoller>(std::move(client).value(), std::move(queries), "instance",
                                      true, milliseconds(3600 * 1000));
}

TEST(NodeLoadPollerTest, MergesQueriesIntoOneSnapshotAndKeepsItOnFailure) {
  FakePrometheus prometheus;
  prometheus.Answer("cpu", Vector({{"b:9100", "20"}, {"a:9100", "10"}}));
  prometheus.Answer("mem", Vector({{"c:9100", "70"}, {"a:9100", "30"}}));
  std::unique_ptr<LoadPoller> poller = MakePoller(prometheus.url(), {"cpu", "", "mem", ""});
  EXPECT_EQ(poller->Current(), nullptr);
  const Clock::time_point before = Clock::now();
  ASSERT_TRUE(poller->PollOnce().ok());
  std::shared_ptr<const LoadSnapshot> snapshot = poller->Current();
  ASSERT_NE(snapshot, nullptr);
  EXPECT_GE(snapshot->taken(), before);
  ASSERT_EQ(snapshot->size(), 3u);
  const NodeLoadSample* a = snapshot->Find("a");
  const NodeLoadSample* b = snapshot->Find("b");
  const NodeLoadSample* c = snapshot->Find("c");
  ASSERT_TRUE(a != nullptr && b != nullptr && c != nullptr);
  EXPECT_DOUBLE_EQ(a->cpu, 10);
  EXPECT_DOUBLE_EQ(a->memory, 30);
  EXPECT_DOUBLE_EQ(b->cpu, 20);
  EXPECT_TRUE(std::isnan(b->memory));
  EXPECT_TRUE(std::isnan(c->cpu));
  EXPECT_DOUBLE_EQ(c->memory, 70);
  EXPECT_TRUE(std::isnan(a->cpu_stddev));
  EXPECT_EQ(snapshot->Find("d"), nullptr);
  PollerStats stats = poller->stats();
  EXPECT_EQ(stats.polls, 1u);
  EXPECT_EQ(stats.query_errors, 0u);
  EXPECT_EQ(stats.nodes_with_data, 3u);

  prometheus.Forget("mem");
  Status failed = poller->PollOnce();
  EXPECT_EQ(failed.code(), StatusCode::kUnavailable);
  EXPECT_EQ(failed.message(), "query memory: prometheus " + prometheus.url() +
                                  ": HTTP 400: bad_data: unknown");
  EXPECT_EQ(poller->Current(), snapshot);  // the last good one stays
  stats = poller->stats();
  EXPECT_EQ(stats.polls, 2u);
  EXPECT_EQ(stats.query_errors, 1u);
  EXPECT_EQ(stats.last_error, failed.message());
  ASSERT_TRUE(stats.last_success.has_value());
  EXPECT_EQ(*stats.last_success, snapshot->taken());
}

TEST(NodeLoadPollerTest, ThreadPollsAtOnceAndStopsPromptly) {
  FakePrometheus prometheus;
  prometheus.Answer("cpu", Vector({{"a", "10"}}));
  std::unique_ptr<LoadPoller> poller = MakePoller(prometheus.url(), {"cpu", "", "", ""});
  poller->Start();
  const auto deadline = Clock::now() + seconds(30);
  while (poller->Current() == nullptr && Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_NE(poller->Current(), nullptr);
  // The next round is an hour away: Stop must wake the thread, not wait.
  poller->Stop();
  poller->Stop();
  EXPECT_EQ(poller->stats().polls, 1u);
}


// ---- through the PolicyHandle ----

// Records what a factory registers.
class FakeHandle final : public PolicyHandle {
 public:
  std::shared_ptr<const ClusterView> Snapshot() const override { return nullptr; }
  StatusOr<NodeStateSlot> AddNodeAccounting(std::shared_ptr<const NodeAccounting>) override {
    return InternalError("not expected");
  }
  Status Watch(WatchSpec, std::shared_ptr<WatchHandler>) override {
    return InternalError("not expected");
  }
  Status AddGetRoute(std::string, GetRouteHandler) override {
    return InternalError("not expected");
  }
  void AddMetrics(MetricsWriter writer) override { metrics.push_back(std::move(writer)); }
  void AddReadiness(std::string name, std::function<bool()>) override {
    readiness.push_back(std::move(name));
  }
  void AddBackgroundTask(std::unique_ptr<BackgroundTask> task) override {
    tasks.push_back(std::move(task));
  }
  void OnPodBound(PodBoundObserver observer) override { bound.push_back(std::move(observer)); }
  void RequireCluster(std::string reason) override { required.push_back(std::move(reason)); }

  std::string Metrics() const {
    std::string out;
    for (const MetricsWriter& w : metrics) w(out);
    return out;
  }

  std::vector<MetricsWriter> metrics;
  std::vector<std::string> readiness;
  std::vector<std::unique_ptr<BackgroundTask>> tasks;
  std::vector<PodBoundObserver> bound;
  std::vector<std::string> required;

 protected:
  std::shared_ptr<void> FindShared(std::string_view key) const override {
    auto it = shared_.find(std::string(key));
    return it == shared_.end() ? nullptr : it->second;
  }
  void KeepShared(std::string key, std::shared_ptr<void> object) override {
    shared_[std::move(key)] = std::move(object);
  }

 private:
  std::map<std::string, std::shared_ptr<void>> shared_;
};

bool Eventually(const std::function<bool()>& done, Clock::duration bound) {
  const auto deadline = Clock::now() + bound;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
}

TEST(NodeLoadHandleTest, PollerIsABackgroundTaskAndBoundPodsCount) {
  FakePrometheus prometheus;
  prometheus.Answer("cpu", Vector({{"a:9100", "10"}}));
  FakeHandle handle;
  PolicyContext context;
  context.handle = &handle;
  context.args_path = "profiles[0].policies[1].args";
  const json args = {{"prometheus", {{"url", prometheus.url()}}},
                     {"queries", {{"cpu", "cpu"}, {"memory", "cpu"}}},
                     {"pollIntervalSeconds", 0.05},
                     {"maxAgeSeconds", 600}};
  StatusOr<std::unique_ptr<Policy>> made = NewNodeLoad(args, context);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  std::unique_ptr<Policy> policy = std::move(made).value();
  ASSERT_EQ(handle.tasks.size(), 1u);
  EXPECT_EQ(handle.tasks[0]->Name(), "NodeLoad poller");
  ASSERT_EQ(handle.bound.size(), 1u);
  ASSERT_EQ(handle.metrics.size(), 1u);
  EXPECT_TRUE(handle.readiness.empty());  // metrics never hold back /readyz
  EXPECT_TRUE(handle.required.empty());   // works without a cluster too

  TestArena arena;
  const std::vector<model::NodeInfo> nodes = {Node(arena, "a"), Node(arena, "b")};
  const model::PodInfo pod = PodBuilder(arena).Name("p").Build();
  auto scores = [&] {
    const ScoreHook* scorer = policy->AsScorer();
    std::vector<const model::NodeInfo*> pointers = {&nodes[0], &nodes[1]};
    RequestState state;
    EXPECT_TRUE(scorer->PreScore(state, pod, pointers).ok());
    return std::vector<int64_t>{scorer->Score(state, pod, nodes[0]),
                                scorer->Score(state, pod, nodes[1])};
  };
  // Not started by the factory: no data, no polls.
  EXPECT_EQ(scores(), (std::vector<int64_t>{50, 50}));
  const std::string instance = "{policy=\"profiles[0].policies[1]\"}";
  EXPECT_NE(handle.Metrics().find("schedext_nodeload_polls_total" + instance + " 0\n"),
            std::string::npos)
      << handle.Metrics();

  ASSERT_TRUE(handle.tasks[0]->Start().ok());
  // a at 10 %: 60 × 10 / 40 + 40 = 55.
  EXPECT_TRUE(Eventually([&] { return scores()[0] == 55; }, seconds(30)));
  // A pod bound to a through the bind cycle: its 200m limit adds 20 %:
  // 60 × 30 / 40 + 40 = 85.
  const model::PodInfo bound = PodBuilder(arena)
                                   .Name("q")
                                   .Uid("uid-q")
                                   .Container({{"cpu", 100}}, {{"cpu", 200}})
                                   .Build();
  handle.bound[0](bound, "a");
  EXPECT_EQ(scores(), (std::vector<int64_t>{85, 50}));

  const std::string text = handle.Metrics();
  for (const std::string& line : std::vector<std::string>{
           "# TYPE schedext_nodeload_polls_total counter\n",
        "# TYPE schedext_nodeload_query_errors_total counter\n",
        "schedext_nodeload_query_errors_total" + instance + " 0\n",
        "# TYPE schedext_nodeload_sample_age_seconds gauge\n",
        "schedext_nodeload_nodes_with_data" + instance + " 1\n",
        "schedext_nodeload_recent_binds" + instance + " 1\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
  }
  EXPECT_NE(text.find("schedext_nodeload_sample_age_seconds" + instance + " "),
            std::string::npos);

  // A second instance shares the writer: each family once, two series.
  context.args_path = "profiles[1].policies[0].args";
  StatusOr<std::unique_ptr<Policy>> second = NewNodeLoad(args, context);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(handle.metrics.size(), 1u);
  const std::string both = handle.Metrics();
  EXPECT_EQ(both.find("# TYPE schedext_nodeload_polls_total"),
            both.rfind("# TYPE schedext_nodeload_polls_total"));
  EXPECT_NE(both.find("schedext_nodeload_polls_total{policy=\"profiles[1].policies[0]\"} 0\n"),
            std::string::npos)
      << both;

  for (auto& task : handle.tasks) task->Stop();
}

// The reason names the configured limit only, the same for every hot node
// (kube-scheduler's event counts nodes per text); Detail, for explain, has
// each node's use, recent binds included.
TEST(NodeLoadPolicyTest, DetailHasTheUseTheReasonLeavesOut) {
  Harness h(R"({"prometheus":{"url":"http://127.0.0.1:1"},"pollIntervalSeconds":1,
               "hotCpuPercent":80,"hotMemoryPercent":90})");
  TestArena arena;
  const std::vector<model::NodeInfo> nodes = {Node(arena, "a"), Node(arena, "b"),
                                              Node(arena, "c"), Node(arena, "d")};
  const model::PodInfo pod = PodBuilder(arena).Name("p").Build();
  NodeLoadSample both = Cpu(30.04);
  both.memory = 80;
  h.Publish({{"a", Cpu(95)}, {"b", Cpu(81.25)}, {"c", both}});
  h.ledger->Add("c", "uid-1", 0, 128 * kMiB, h.now);  // +12.5 % of 1 GiB
  EXPECT_EQ(h.Filter(pod, nodes),
            (std::vector<std::string>{"node(s) were too hot: CPU use above 80%",
                                      "node(s) were too hot: CPU use above 80%",
                                      "node(s) were too hot: memory use above 90%", "ok"}));
  EXPECT_EQ(h.Details(pod, nodes),
            (std::vector<std::string>{
                "CPU use 95% (with binds since the sample)",
                "CPU use 81.3% (with binds since the sample)",
                "CPU use 30%, memory use 92.5% (with binds since the sample)", ""}));
}

}  // namespace
}  // namespace schedext::policy::nodeload
