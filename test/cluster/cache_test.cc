// ClusterCache: usage arithmetic, terminal pods, moves and deletes, replace
// semantics, node-cache resolution, assume / confirm / forget / expire with a
// fake clock, snapshot immutability, per-event cost, and a concurrency test.
#include "schedext/cluster/cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cluster/flat_persistent_map.h"
#include "cluster/persistent_map.h"
#include "schedext/policy/node_summary.h"
#include "schedext/policy/policy_host.h"
#include "testing/model_builders.h"

namespace schedext::cluster {
namespace {

using ::schedext::test::NodeBuilder;
using ::schedext::test::PodBuilder;
using ::schedext::test::TestArena;
using namespace std::chrono_literals;

constexpr int64_t kGi = 1LL << 30;
constexpr int64_t kMi = 1LL << 20;

using Requests = std::initializer_list<std::pair<std::string_view, int64_t>>;

// Test objects are built in a scratch arena and deep-copied, as the informer does.
InformerObject Pod(std::string_view name, std::string_view node, Requests requests,
                   std::string_view phase = "Running") {
  TestArena arena;
  PodBuilder builder(arena);
  builder.Name(name).Namespace("default").Uid("uid-" + std::string(name)).Phase(phase);
  if (!node.empty()) {
    builder.NodeName(node);
  }
  builder.Container(requests);
  return {nullptr, std::make_shared<const model::OwnedPod>(builder.Build()), nullptr};
}

InformerObject Node(std::string_view name, int64_t milli_cpu = 4000, int64_t pods = 110) {
  TestArena arena;
  model::NodeInfo node = NodeBuilder(arena)
                             .Name(name)
                             .Allocatable("cpu", milli_cpu)
                             .Allocatable("memory", 16 * kGi)
                             .Allocatable("pods", pods)
                             .Build();
  node.usage = nullptr;
  return {std::make_shared<const model::OwnedNode>(node), nullptr, nullptr};
}

// A cache whose clock the test moves.
struct Fixture {
  std::mutex mu;
  std::chrono::steady_clock::time_point now{};
  ClusterCache cache;

  explicit Fixture(std::chrono::milliseconds ttl = 30s)
      : cache(CacheOptions{ttl, [this] {
                             std::lock_guard<std::mutex> lock(mu);
                             return now;
                           },
                           {},
                           {},
                           {},
                           {}}) {}
  void Advance(std::chrono::milliseconds d) {
    std::lock_guard<std::mutex> lock(mu);
    now += d;
  }
  void Sync(std::vector<InformerObject> nodes, std::vector<InformerObject> pods) {
    cache.OnReplace(ResourceKind::kNodes, std::move(nodes));
    cache.OnReplace(ResourceKind::kPods, std::move(pods));
  }
  model::NodeUsage Usage(std::string_view node) {
    const std::shared_ptr<const Snapshot> snapshot = cache.snapshot();  // keeps `usage` alive
    const model::NodeUsage* usage = snapshot->FindUsage(node);
    return usage != nullptr ? *usage : model::NodeUsage{};
  }
};

AssumeRequest Request(std::string_view name, std::string_view node,
                      const model::PodInfo* pod = nullptr) {
  static std::vector<std::unique_ptr<std::string>> uids;  // test-lifetime storage
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  uids.push_back(std::make_unique<std::string>("uid-" + std::string(name)));
  return AssumeRequest{*uids.back(), "default", name, node, pod};
}

TEST(CacheTest, UsageSumsBoundPodsAndExcludesTerminalOnes) {
  Fixture f;
  f.Sync({Node("n1"), Node("n2")}, {Pod("a", "n1", {{"cpu", 500}, {"memory", kGi}}),
                                    Pod("b", "n1", {{"cpu", 250}, {"example.com/gpu", 1}}),
                                    Pod("c", "", {{"cpu", 1000}}),  // pending: counts nowhere
                                    Pod("d", "n1", {{"cpu", 4000}}, "Succeeded"),     // terminal
                                    Pod("e", "n1", {{"memory", 8 * kGi}}, "Failed"),  // terminal
                                    Pod("f", "n2", {})});  // no requests at all
  const std::shared_ptr<const Snapshot> snap = f.cache.snapshot();
  ASSERT_TRUE(snap->synced());
  const model::NodeInfo* n1 = snap->FindNode("n1");
  ASSERT_NE(n1, nullptr);
  ASSERT_NE(n1->usage, nullptr);
  // requested: cpu 500 + 250 = 750m; memory 1Gi + 0; gpu 1; two pods.
  EXPECT_EQ(n1->usage->requested.milli_cpu, 750);
  EXPECT_EQ(n1->usage->requested.memory, kGi);
  EXPECT_EQ(n1->usage->requested.Get("example.com/gpu"), 1);
  EXPECT_EQ(n1->usage->pods, 2);
  // scoring: b names no memory, so it counts the 200Mi default: 1Gi + 200Mi.
  EXPECT_EQ(n1->usage->scoring_requested.milli_cpu, 750);
  EXPECT_EQ(n1->usage->scoring_requested.memory, kGi + 200 * kMi);
  // f requests nothing: requested 0, scoring 100m cpu + 200Mi memory.
  const model::NodeInfo* n2 = snap->FindNode("n2");
  EXPECT_EQ(n2->usage->requested.milli_cpu, 0);
  EXPECT_EQ(n2->usage->scoring_requested.milli_cpu, 100);
  EXPECT_EQ(n2->usage->scoring_requested.memory, 200 * kMi);
  EXPECT_EQ(n2->usage->pods, 1);
  EXPECT_EQ(n1->allocatable.milli_cpu, 4000);
  // Terminal pods are not kept; the pending one is (bind may need it).
  EXPECT_EQ(snap->pod_count(), 4u);
  EXPECT_EQ(snap->FindPod("uid-d"), nullptr);
  ASSERT_NE(snap->FindPod("uid-c"), nullptr);
  EXPECT_EQ(snap->FindPod("uid-c")->node_name, "");
  EXPECT_EQ(snap->node_count(), 2u);
}

TEST(CacheTest, PodEventsMoveUsage) {
  struct Step {
    std::string name;
    std::function<void(ClusterCache&)> apply;
    int64_t n1_cpu, n1_pods, n2_cpu, n2_pods;
  };
  Fixture f;
  f.Sync({Node("n1"), Node("n2")},
         {Pod("a", "n1", {{"cpu", 500}}), Pod("b", "n1", {{"cpu", 250}})});
  const std::vector<Step> steps = {
      // 500 + 250 on n1.
      {"start", [](ClusterCache&) {}, 750, 2, 0, 0},
      // b is recreated on n2 (same uid, new node): n1 750 − 250, n2 + 250.
      {"moved",
       [](ClusterCache& c) {
         c.OnUpsert(ResourceKind::kPods, Pod("b", "n2", {{"cpu", 250}}));
       },
       500, 1, 250, 1},
      // a resized in place to 1500m: n1 500 − 500 + 1500.
      {"resized",
       [](ClusterCache& c) {
         c.OnUpsert(ResourceKind::kPods, Pod("a", "n1", {{"cpu", 1500}}));
       },
       1500, 1, 250, 1},
      // b finishes: terminal pods release their requests.
      {"succeeded",
       [](ClusterCache& c) {
         c.OnUpsert(ResourceKind::kPods, Pod("b", "n2", {{"cpu", 250}}, "Succeeded"));
       },
       1500, 1, 0, 0},
      // a is deleted.
      {"deleted",
       [](ClusterCache& c) {
         c.OnDelete(ResourceKind::kPods, Pod("a", "n1", {{"cpu", 1500}}));
       },
       0, 0, 0, 0},
      // Deleting an unknown pod changes nothing.
      {"unknown delete",
       [](ClusterCache& c) {
         c.OnDelete(ResourceKind::kPods, Pod("zz", "n1", {{"cpu", 1}}));
       },
       0, 0, 0, 0},
  };
  for (const Step& step : steps) {
    SCOPED_TRACE(step.name);
    step.apply(f.cache);
    EXPECT_EQ(f.Usage("n1").requested.milli_cpu, step.n1_cpu);
    EXPECT_EQ(f.Usage("n1").pods, step.n1_pods);
    EXPECT_EQ(f.Usage("n2").requested.milli_cpu, step.n2_cpu);
    EXPECT_EQ(f.Usage("n2").pods, step.n2_pods);
  }
  EXPECT_EQ(f.cache.snapshot()->pod_count(), 0u);
}

// A policy's node summary: what it saw of the node and its usage.
struct SeenSummary {
  int64_t allocatable_milli_cpu;
  int64_t requested_milli_cpu;
  int64_t pods;
};

// The cache writes the summaries into every node entry it builds, from the
// entry's own node and usage: a pod event re-summarizes the node it counts
// on, earlier snapshots keep theirs, and a copy given another usage has none.
TEST(CacheTest, NodeEntriesCarryTheirSummaries) {
  policy::PolicyHost host;
  // One byte first, so the second summary's offset is aligned past it.
  const policy::NodeSummarySlot<uint8_t> first = host.AddNodeSummary<uint8_t>(
      [](const model::NodeInfo& node) { return static_cast<uint8_t>(node.name.size()); });
  const policy::NodeSummarySlot<SeenSummary> seen =
      host.AddNodeSummary<SeenSummary>([](const model::NodeInfo& node) {
        return SeenSummary{node.allocatable.milli_cpu, node.usage->requested.milli_cpu,
                           node.usage->pods};
      });
  ASSERT_TRUE(first.present());
  ASSERT_TRUE(seen.present());
  ASSERT_EQ(host.summaries().size(), 2U);
  EXPECT_EQ(host.summaries()[0].offset, 0U);
  EXPECT_EQ(host.summaries()[1].offset, alignof(SeenSummary));
  CacheOptions options;
  options.summaries = host.summaries();
  ClusterCache cache(options);
  cache.OnReplace(ResourceKind::kNodes, {Node("node-a", 4000), Node("node-bb", 2000)});
  cache.OnReplace(ResourceKind::kPods, {Pod("p1", "node-a", {{"cpu", 500}})});

  const std::shared_ptr<const Snapshot> before = cache.snapshot();
  const model::NodeInfo* a = before->FindNode("node-a");
  const model::NodeInfo* b = before->FindNode("node-bb");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->has_summary());
  uint8_t length = 0;
  SeenSummary summary{};
  ASSERT_TRUE(first.Get(*a, length));
  EXPECT_EQ(length, 6);
  ASSERT_TRUE(seen.Get(*a, summary));
  EXPECT_EQ(summary.allocatable_milli_cpu, 4000);
  EXPECT_EQ(summary.requested_milli_cpu, 500);
  EXPECT_EQ(summary.pods, 1);
  ASSERT_TRUE(first.Get(*b, length));
  EXPECT_EQ(length, 7);
  ASSERT_TRUE(seen.Get(*b, summary));
  EXPECT_EQ(summary.requested_milli_cpu, 0);
  EXPECT_EQ(summary.pods, 0);

  // A second pod on node-a: the next snapshot's node-a says so.
  cache.OnUpsert(ResourceKind::kPods, Pod("p2", "node-a", {{"cpu", 250}}));
  const std::shared_ptr<const Snapshot> after = cache.snapshot();
  ASSERT_TRUE(seen.Get(*after->FindNode("node-a"), summary));
  EXPECT_EQ(summary.requested_milli_cpu, 750);
  EXPECT_EQ(summary.pods, 2);
  ASSERT_TRUE(seen.Get(*a, summary));  // the earlier snapshot is unchanged
  EXPECT_EQ(summary.requested_milli_cpu, 500);
  // The node object changes (a resize): re-summarized with its usage.
  cache.OnUpsert(ResourceKind::kNodes, Node("node-a", 8000));
  ASSERT_TRUE(seen.Get(*cache.snapshot()->FindNode("node-a"), summary));
  EXPECT_EQ(summary.allocatable_milli_cpu, 8000);
  EXPECT_EQ(summary.requested_milli_cpu, 750);

  // A copy that points at another usage has no summary: the policy then
  // computes from the node.
  model::NodeInfo copy = *a;
  EXPECT_TRUE(seen.Get(copy, summary));
  const model::NodeUsage other;
  copy.usage = &other;
  EXPECT_FALSE(copy.has_summary());
  EXPECT_FALSE(seen.Get(copy, summary));
  // A slot of another host reads nothing here: its offsets are another
  // layout's, even where they coincide.
  policy::PolicyHost other_host;
  const policy::NodeSummarySlot<uint8_t> foreign = other_host.AddNodeSummary<uint8_t>(
      [](const model::NodeInfo&) { return uint8_t{1}; });
  ASSERT_TRUE(foreign.present());
  EXPECT_FALSE(foreign.Get(*a, length));
  // Nor does any slot on a cache given no registrations.
  ClusterCache bare;
  bare.OnReplace(ResourceKind::kNodes, {Node("node-a")});
  bare.OnReplace(ResourceKind::kPods, {});
  EXPECT_FALSE(bare.snapshot()->FindNode("node-a")->has_summary());
  EXPECT_FALSE(first.Get(*bare.snapshot()->FindNode("node-a"), length));
  // As does a node no cache stored, and any node for an empty slot.
  TestArena arena;
  EXPECT_FALSE(seen.Get(NodeBuilder(arena).Name("loose").Build(), summary));
  EXPECT_FALSE(policy::NodeSummarySlot<SeenSummary>().Get(*a, summary));
}

// Registrations past NodeInfo's summary bytes get an empty slot, not an
// error: their policies compute from the node.
TEST(CacheTest, SummariesBeyondTheBytesGetNoSlot) {
  policy::PolicyHost host;
  struct Big {
    std::byte bytes[100];
  };
  size_t granted = 0;
  for (int i = 0; i < 4; ++i) {
    if (host.AddNodeSummary<Big>([](const model::NodeInfo&) { return Big{}; }).present()) {
      ++granted;
    }
  }
  EXPECT_EQ(granted, model::kNodeSummaryBytes / sizeof(Big));
  EXPECT_EQ(host.NodeSummaryBytesUsed(), granted * sizeof(Big));
  // A smaller one still fits in what is left.
  EXPECT_TRUE(host.AddNodeSummary<uint32_t>([](const model::NodeInfo&) { return 1U; }).present());
  EXPECT_EQ(host.summaries().size(), granted + 1);
}

TEST(CacheTest, ResolveNeedsBothInformersSynced) {
  Fixture f;
  const std::vector<std::string_view> names = {"n1", "nope", "n2"};
  std::vector<const model::NodeInfo*> out;
  std::shared_ptr<const Snapshot> keep_alive;
  EXPECT_EQ(f.cache.Resolve(names, out, keep_alive).code(), StatusCode::kUnavailable);
  f.cache.OnReplace(ResourceKind::kNodes, {Node("n1"), Node("n2")});
  EXPECT_EQ(f.cache.Resolve(names, out, keep_alive).code(), StatusCode::kUnavailable);
  EXPECT_FALSE(f.cache.Synced());
  f.cache.OnReplace(ResourceKind::kPods, {});
  ASSERT_TRUE(f.cache.Resolve(names, out, keep_alive).ok());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0]->name, "n1");
  EXPECT_EQ(out[1], nullptr);
  EXPECT_EQ(out[2]->name, "n2");
  EXPECT_NE(out[0]->usage, nullptr);
  EXPECT_NE(keep_alive, nullptr);
}

TEST(CacheTest, ReplaceDeletesWhatDisappeared) {
  Fixture f;
  f.Sync({Node("n1"), Node("n2")},
         {Pod("a", "n1", {{"cpu", 500}}), Pod("b", "n2", {{"cpu", 250}})});
  // Relist of pods: a is gone, c appeared on n2.
  f.cache.OnReplace(ResourceKind::kPods,
                    {Pod("b", "n2", {{"cpu", 250}}), Pod("c", "n2", {{"cpu", 100}})});
  EXPECT_EQ(f.Usage("n1").pods, 0);
  EXPECT_EQ(f.Usage("n2").requested.milli_cpu, 350);  // 250 + 100
  EXPECT_EQ(f.cache.snapshot()->FindPod("uid-a"), nullptr);
  // Relist of nodes: n1 is gone; n2 keeps its usage across the replace.
  f.cache.OnReplace(ResourceKind::kNodes, {Node("n2", 8000)});
  const std::shared_ptr<const Snapshot> snap = f.cache.snapshot();
  EXPECT_EQ(snap->FindNode("n1"), nullptr);
  ASSERT_NE(snap->FindNode("n2"), nullptr);
  EXPECT_EQ(snap->FindNode("n2")->allocatable.milli_cpu, 8000);
  EXPECT_EQ(snap->FindNode("n2")->usage->requested.milli_cpu, 350);
  EXPECT_EQ(snap->node_count(), 1u);
}

TEST(CacheTest, PodsOfAnUnknownNodeCountWhenItArrives) {
  Fixture f;
  f.Sync({}, {Pod("a", "late", {{"cpu", 300}})});
  EXPECT_EQ(f.cache.snapshot()->FindNode("late"), nullptr);
  f.cache.OnUpsert(ResourceKind::kNodes, Node("late"));
  const std::shared_ptr<const Snapshot> snapshot = f.cache.snapshot();
  const model::NodeInfo* node = snapshot->FindNode("late");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->usage->requested.milli_cpu, 300);
  // The node is deleted while its pod still runs: unknown, usage kept.
  f.cache.OnDelete(ResourceKind::kNodes, Node("late"));
  EXPECT_EQ(f.cache.snapshot()->FindNode("late"), nullptr);
  EXPECT_EQ(f.Usage("late").pods, 1);
  EXPECT_EQ(f.cache.snapshot()->node_count(), 0u);
}

// fits: the pod's cpu fits in allocatable − requested.
bool CpuFits(const model::PodInfo& pod, const model::NodeInfo& node) {
  return node.usage->requested.milli_cpu + pod.requests.milli_cpu <= node.allocatable.milli_cpu;
}

TEST(CacheTest, AssumeIfFitsReservesAndConfirmCountsOnce) {
  Fixture f;
  f.Sync({Node("n1", 1000)}, {Pod("p", "", {{"cpu", 600}}), Pod("q", "", {{"cpu", 600}})});
  // p reserved: 0 + 600 <= 1000.
  StatusOr<bool> p = f.cache.AssumeIfFits(Request("p", "n1"), CpuFits);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(*p);
  EXPECT_EQ(f.Usage("n1").requested.milli_cpu, 600);
  EXPECT_TRUE(f.cache.snapshot()->IsAssumed("uid-p"));
  EXPECT_EQ(f.cache.snapshot()->FindPod("uid-p")->node_name, "n1");
  // q does not fit any more: 600 + 600 > 1000, and nothing is reserved.
  StatusOr<bool> q = f.cache.AssumeIfFits(Request("q", "n1"), CpuFits);
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(*q);
  EXPECT_EQ(f.Usage("n1").pods, 1);
  // A second bind for p while the first is in flight is refused; counted once.
  EXPECT_EQ(f.cache.AssumeIfFits(Request("p", "n1"), CpuFits).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(f.Usage("n1").requested.milli_cpu, 600);
  EXPECT_EQ(f.cache.AssumeIfFits(Request("p", "n2"), CpuFits).status().code(),
            StatusCode::kFailedPrecondition);
  ASSERT_TRUE(f.cache.FinishBinding("uid-p").ok());
  // Retried after the first bind finished: true, still counted once.
  EXPECT_TRUE(*f.cache.AssumeIfFits(Request("p", "n1"), CpuFits));
  EXPECT_EQ(f.Usage("n1").requested.milli_cpu, 600);
  // The watch shows p still pending (lagging), then bound: confirmed, once.
  f.cache.OnUpsert(ResourceKind::kPods, Pod("p", "", {{"cpu", 600}}));
  EXPECT_EQ(f.Usage("n1").requested.milli_cpu, 600);
  f.cache.OnUpsert(ResourceKind::kPods, Pod("p", "n1", {{"cpu", 600}}));
  EXPECT_EQ(f.Usage("n1").requested.milli_cpu, 600);
  EXPECT_EQ(f.Usage("n1").pods, 1);
  EXPECT_FALSE(f.cache.snapshot()->IsAssumed("uid-p"));
  EXPECT_EQ(f.cache.Stats().assumed, 0u);
  // Past the TTL nothing expires: it is confirmed.
  f.Advance(1h);
  EXPECT_EQ(f.cache.ExpireAssumed(), 0u);
  EXPECT_EQ(f.Usage("n1").requested.milli_cpu, 600);
  // Bound already: assuming again is a no-op success.
  EXPECT_TRUE(f.cache.Assume(Request("p", "n1")).ok());
  EXPECT_EQ(f.Usage("n1").pods, 1);
}

TEST(CacheTest, ForgetRestoresThePendingPod) {
  Fixture f;
  f.Sync({Node("n1")}, {Pod("p", "", {{"cpu", 600}})});
  ASSERT_TRUE(*f.cache.AssumeIfFits(Request("p", "n1"), CpuFits));
  ASSERT_TRUE(f.cache.Forget("uid-p").ok());
  EXPECT_EQ(f.Usage("n1").pods, 0);
  ASSERT_NE(f.cache.snapshot()->FindPod("uid-p"), nullptr);
  EXPECT_EQ(f.cache.snapshot()->FindPod("uid-p")->node_name, "");
  EXPECT_FALSE(f.cache.snapshot()->IsAssumed("uid-p"));
  EXPECT_EQ(f.cache.Forget("uid-p").code(), StatusCode::kNotFound);
}

TEST(CacheTest, ReservationsExpireAfterTheirTtl) {
  struct Case {
    std::string name;
    std::chrono::milliseconds ttl;
    bool finish;  // FinishBinding called (the TTL runs only after it)
    std::chrono::milliseconds advance;
    bool expired;
  };
  const std::vector<Case> cases = {
      {"before the ttl", 30s, true, 29s, false},
      {"at the ttl", 30s, true, 30s, true},
      {"bind still in flight", 30s, false, 1h, false},
      {"ttl zero never expires", 0ms, true, 24h, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f(c.ttl);
    f.Sync({Node("n1")}, {Pod("p", "", {{"cpu", 600}})});
    ASSERT_TRUE(*f.cache.AssumeIfFits(Request("p", "n1"), CpuFits));
    if (c.finish) {
      ASSERT_TRUE(f.cache.FinishBinding("uid-p").ok());
    }
    f.Advance(c.advance);
    // Expiry is checked when any event is applied (here: an unrelated node).
    f.cache.OnUpsert(ResourceKind::kNodes, Node("other"));
    EXPECT_EQ(f.Usage("n1").pods, c.expired ? 0 : 1);
    EXPECT_EQ(f.cache.Stats().assumed, c.expired ? 0u : 1u);
  }
}

TEST(CacheTest, AssumeWithGivenRequestsAndErrors) {
  Fixture f;
  f.Sync({Node("n1")}, {});
  TestArena arena;
  const model::PodInfo pod = PodBuilder(arena).Name("x").Container({{"cpu", 200}}).Build();
  // Not known to the cache: the requests come from the caller. Assume (after
  // a successful bind) does not need the node object either.
  ASSERT_TRUE(f.cache.Assume(Request("x", "n1", &pod)).ok());
  ASSERT_TRUE(f.cache.Assume(Request("y", "ghost", &pod)).ok());
  EXPECT_EQ(f.Usage("n1").requested.milli_cpu, 200);
  EXPECT_EQ(f.Usage("ghost").requested.milli_cpu, 200);
  EXPECT_EQ(f.cache.snapshot()->FindPod("uid-x")->name, "x");
  EXPECT_EQ(f.cache.AssumeIfFits(Request("z", "n1"), CpuFits).status().code(),
            StatusCode::kNotFound);  // unknown pod, no requests given
  EXPECT_EQ(f.cache.AssumeIfFits(Request("w", "ghost", &pod), CpuFits).status().code(),
            StatusCode::kNotFound);  // unknown node
  // The watch shows x bound to another node than assumed: the API wins.
  f.cache.OnUpsert(ResourceKind::kPods, Pod("x", "n2", {{"cpu", 200}}));
  EXPECT_EQ(f.Usage("n1").pods, 0);
  EXPECT_EQ(f.Usage("n2").requested.milli_cpu, 200);
  // y is deleted before it was ever seen bound: the reservation goes too.
  f.cache.OnDelete(ResourceKind::kPods, Pod("y", "", {}));
  EXPECT_EQ(f.Usage("ghost").pods, 0);
  EXPECT_EQ(f.cache.Stats().assumed, 0u);
}

TEST(CacheTest, RelistKeepsPendingReservationsAndConfirmsBoundOnes) {
  Fixture f;
  f.Sync({Node("n1")}, {Pod("p", "", {{"cpu", 100}}), Pod("q", "", {{"cpu", 200}})});
  ASSERT_TRUE(*f.cache.AssumeIfFits(Request("p", "n1"), CpuFits));
  ASSERT_TRUE(*f.cache.AssumeIfFits(Request("q", "n1"), CpuFits));
  // The relist shows p bound (confirmed) and q still pending.
  f.cache.OnReplace(ResourceKind::kPods,
                    {Pod("p", "n1", {{"cpu", 100}}), Pod("q", "", {{"cpu", 200}})});
  EXPECT_EQ(f.Usage("n1").requested.milli_cpu, 300);  // 100 bound + 200 reserved
  EXPECT_EQ(f.Usage("n1").pods, 2);
  EXPECT_FALSE(f.cache.snapshot()->IsAssumed("uid-p"));
  EXPECT_TRUE(f.cache.snapshot()->IsAssumed("uid-q"));
  ASSERT_TRUE(f.cache.Forget("uid-q").ok());
  EXPECT_EQ(f.Usage("n1").requested.milli_cpu, 100);
}

TEST(CacheTest, SnapshotsAreImmutableWhileEventsApply) {
  Fixture f;
  f.Sync({Node("n1")}, {Pod("a", "n1", {{"cpu", 500}})});
  const std::shared_ptr<const Snapshot> before = f.cache.snapshot();
  const model::NodeInfo* n1 = before->FindNode("n1");
  f.cache.OnUpsert(ResourceKind::kPods, Pod("b", "n1", {{"cpu", 250}}));
  f.cache.OnUpsert(ResourceKind::kNodes, Node("n1", 9000));
  f.cache.OnDelete(ResourceKind::kPods, Pod("a", "n1", {}));
  // The old snapshot still reads its own state through the same pointers.
  EXPECT_EQ(n1->usage->requested.milli_cpu, 500);
  EXPECT_EQ(n1->allocatable.milli_cpu, 4000);
  EXPECT_NE(before->FindPod("uid-a"), nullptr);
  EXPECT_EQ(before->FindPod("uid-b"), nullptr);
  const std::shared_ptr<const Snapshot> after = f.cache.snapshot();
  EXPECT_GT(after->generation(), before->generation());
  EXPECT_EQ(after->FindNode("n1")->usage->requested.milli_cpu, 250);
  EXPECT_EQ(after->FindNode("n1")->allocatable.milli_cpu, 9000);
}

TEST(CacheTest, AnEventCopiesFewEntriesAtScale) {
  // 15,000 nodes and 150,000 pods (the design scale): applying one event
  // copies the node table's root and a block or two, and a pod trie path:
  // about twice what it copies in a tiny cluster.
  auto copied_per_event = [](int nodes, int pods_per_node) {
    Fixture f;
    std::vector<InformerObject> node_objects;
    std::vector<InformerObject> pod_objects;
    for (int n = 0; n < nodes; ++n) {
      node_objects.push_back(Node("node-" + std::to_string(n)));
      for (int p = 0; p < pods_per_node; ++p) {
        pod_objects.push_back(Pod("p-" + std::to_string(n) + "-" + std::to_string(p),
                                  "node-" + std::to_string(n), {{"cpu", 10}}));
      }
    }
    f.Sync(std::move(node_objects), std::move(pod_objects));
    size_t worst = 0;
    for (int i = 0; i < 20; ++i) {
      f.cache.OnUpsert(ResourceKind::kPods, Pod("new-" + std::to_string(i),
                                                "node-" + std::to_string(i * 7), {{"cpu", 5}}));
      worst = std::max(worst, f.cache.Stats().last_update_copied_slots);
    }
    return worst;
  };
  const size_t small = copied_per_event(10, 10);
  const size_t large = copied_per_event(15'000, 10);
  // The node table: its root (32 pointers at 15,000 nodes), a middle block
  // (32) and a leaf (32); the pod trie: ~4 levels of ≤ 32 slots.
  EXPECT_LT(large, 300u);
  EXPECT_LT(large, small * 20);
  RecordProperty("slots_small", static_cast<int>(small));
  RecordProperty("slots_large", static_cast<int>(large));
}

TEST(CacheTest, PersistentMapSharesUntouchedEntries) {
  struct Item {
    std::string key;
    int value;
  };
  struct KeyOf {
    std::string_view operator()(const Item& i) const { return i.key; }
  };
  using Map = internal::PersistentMap<Item, KeyOf>;
  Map map;
  for (int i = 0; i < 5000; ++i) {
    map = map.Set(std::make_shared<const Item>(Item{"k" + std::to_string(i), i}));
  }
  const Map before = map;
  const Map after = map.Set(std::make_shared<const Item>(Item{"k42", -1})).Erase("k7");
  EXPECT_EQ(before.size(), 5000u);
  EXPECT_EQ(after.size(), 4999u);
  EXPECT_EQ((*before.Find("k42"))->value, 42);
  EXPECT_EQ((*after.Find("k42"))->value, -1);
  EXPECT_NE(before.Find("k7"), nullptr);
  EXPECT_EQ(after.Find("k7"), nullptr);
  // Untouched entries are the same objects, not copies.
  EXPECT_EQ(before.Find("k100")->get(), after.Find("k100")->get());
  size_t count = 0;
  after.ForEach([&](const std::shared_ptr<const Item>&) { ++count; });
  EXPECT_EQ(count, 4999u);
  Map emptied = after;
  for (int i = 0; i < 5000; ++i) {
    emptied = emptied.Erase("k" + std::to_string(i));
  }
  EXPECT_TRUE(emptied.empty());
  EXPECT_EQ(emptied.Find("k1"), nullptr);
}

// Random sets, replacements and erasures of `distinct` keys checked against
// std::map after every step, and against the map as it was before the step
// (it must not change). Either map type (the trie or the flat table).
template <template <typename, typename, typename> class MapType, typename Hasher>
void CheckMapAgainstModel(uint32_t seed, int distinct = 300, int steps = 3000) {
  struct Item {
    std::string key;
    int value;
  };
  struct KeyOf {
    std::string_view operator()(const Item& i) const { return i.key; }
  };
  using Map = MapType<Item, KeyOf, Hasher>;
  std::mt19937 random(seed);
  Map map;
  std::map<std::string, int> model;
  for (int step = 0; step < steps; ++step) {
    const std::string key = "key-" + std::to_string(random() % distinct);
    const Map before = map;
    const bool check_all = step % 97 == 0 || step == steps - 1;
    const std::map<std::string, int> model_before =
        check_all ? model : std::map<std::string, int>();
    if (random() % 3 == 0) {
      map = map.Erase(key);
      model.erase(key);
    } else {
      map = map.Set(std::make_shared<const Item>(Item{key, step}));
      model[key] = step;
    }
    ASSERT_EQ(map.size(), model.size());
    const std::shared_ptr<const Item>* found = map.Find(key);
    ASSERT_EQ(found != nullptr, model.contains(key)) << key;
    if (found != nullptr) {
      EXPECT_EQ((*found)->value, model[key]);
    }
    if (check_all) {
      for (const auto& [k, v] : model) {
        found = map.Find(k);
        ASSERT_NE(found, nullptr) << k;
        EXPECT_EQ((*found)->value, v);
      }
      for (const auto& [k, v] : model_before) {
        found = before.Find(k);
        ASSERT_NE(found, nullptr) << k;
        EXPECT_EQ((*found)->value, v);
      }
      EXPECT_EQ(before.size(), model_before.size());
      size_t count = 0;
      map.ForEach([&](const std::shared_ptr<const Item>& item) {
        ++count;
        EXPECT_EQ(model[item->key], item->value);
      });
      EXPECT_EQ(count, model.size());
      // FindMany answers exactly what Find does, for present and absent keys,
      // in any order, repeated, across group boundaries.
      std::vector<std::string> keys;
      for (int k = 0; k < distinct; ++k) {
        keys.push_back("key-" + std::to_string(k));
      }
      keys.push_back("key-7");
      keys.push_back("not-a-key");
      std::shuffle(keys.begin(), keys.end(), random);
      const std::vector<std::string_view> views(keys.begin(), keys.end());
      static const std::shared_ptr<const Item> kNotWritten;  // no lookup returns it
      std::vector<const std::shared_ptr<const Item>*> many(views.size(), &kNotWritten);
      map.FindMany(views, [&](size_t i, const std::shared_ptr<const Item>* item) {
        ASSERT_LT(i, many.size());
        many[i] = item;
      });
      for (size_t i = 0; i < views.size(); ++i) {
        ASSERT_EQ(many[i], map.Find(views[i])) << views[i];
      }
    }
  }
  Map empty;
  const std::vector<std::string_view> none = {"key-1", "absent"};
  int calls = 0;
  empty.FindMany(none, [&](size_t, const std::shared_ptr<const Item>* item) {
    EXPECT_EQ(item, nullptr);
    ++calls;
  });
  EXPECT_EQ(calls, 2);
}

template <typename V, typename KeyOf, typename Hasher>
using Trie = internal::PersistentMap<V, KeyOf, Hasher>;
template <typename V, typename KeyOf, typename Hasher>
using Flat = internal::FlatPersistentMap<V, KeyOf, Hasher>;

TEST(CacheTest, PersistentMapMatchesAModel) { CheckMapAgainstModel<Trie, internal::KeyHash>(1); }

TEST(CacheTest, PersistentMapKeepsKeysWhoseHashesCollide) {
  // Three full hashes that agree in all but the lowest bits: every key sits
  // in one of three buckets at the bottom of a 13-level chain.
  struct ThreeHashes {
    uint64_t operator()(std::string_view key) const { return key.back() % 3; }
  };
  CheckMapAgainstModel<Trie, ThreeHashes>(2);
  // Hashes that agree in their low 50 bits: deep paths, few buckets.
  struct LowBitsAgree {
    uint64_t operator()(std::string_view key) const {
      return internal::KeyHash{}(key) << 50;
    }
  };
  CheckMapAgainstModel<Trie, LowBitsAgree>(3);
}

TEST(CacheTest, FlatPersistentMapMatchesAModel) {
  CheckMapAgainstModel<Flat, internal::KeyHash>(4);
  // Enough keys to double the table a few times, with erasures between.
  CheckMapAgainstModel<Flat, internal::KeyHash>(5, 6000, 20000);
}

TEST(CacheTest, FlatPersistentMapKeepsKeysWhoseHashesCollide) {
  // Three full hashes: every key probes from one of three home slots, in
  // runs hundreds of slots long that erasures must close up.
  struct ThreeHashes {
    uint64_t operator()(std::string_view key) const { return key.back() % 3; }
  };
  CheckMapAgainstModel<Flat, ThreeHashes>(6);
  // Home slots at the end of the table: the runs wrap round to slot 0.
  struct AtTheEnd {
    uint64_t operator()(std::string_view key) const { return ~uint64_t{0} - key.back() % 3; }
  };
  CheckMapAgainstModel<Flat, AtTheEnd>(7);
  // Distinct hashes whose low bits agree in groups of four.
  struct LowBitsAgree {
    uint64_t operator()(std::string_view key) const {
      const uint64_t h = internal::KeyHash{}(key);
      return (h << 40) | ((h >> 2) & 0xff);
    }
  };
  CheckMapAgainstModel<Flat, LowBitsAgree>(8, 1500, 5000);
}

TEST(CacheTest, FlatPersistentMapTellsApartKeysThatDifferInOneByte) {
  // Every key has the same hash, so each lookup compares its key with the
  // stored ones until the right one: keys of every length around the
  // compare's 8- and 16-byte steps, differing in one byte at each position,
  // or only in length.
  struct Item {
    std::string key;
    int value;
  };
  struct KeyOf {
    std::string_view operator()(const Item& i) const { return i.key; }
  };
  struct OneHash {
    uint64_t operator()(std::string_view) const { return 12345; }
  };
  using Map = internal::FlatPersistentMap<Item, KeyOf, OneHash>;
  for (size_t length = 0; length <= 70; ++length) {
    std::string base;
    for (size_t i = 0; i < length; ++i) {
      base.push_back(static_cast<char>('a' + i % 26));
    }
    std::vector<std::string> keys = {base, base + "z"};
    for (size_t at = 0; at < length; ++at) {
      keys.push_back(base);
      keys.back()[at] = '#';
    }
    Map map;
    for (size_t i = 0; i < keys.size(); ++i) {
      map = map.Set(std::make_shared<const Item>(Item{keys[i], static_cast<int>(i)}));
    }
    ASSERT_EQ(map.size(), keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      const auto* found = map.Find(keys[i]);
      ASSERT_NE(found, nullptr) << keys[i];
      EXPECT_EQ((*found)->value, static_cast<int>(i)) << keys[i];
    }
    for (size_t at = 0; at < length; ++at) {
      std::string absent = base;
      absent[at] = '%';
      EXPECT_EQ(map.Find(absent), nullptr) << absent;
    }
    if (length > 0) {
      EXPECT_EQ(map.Find(base.substr(1)), nullptr);
    }
  }
}

TEST(CacheTest, FlatPersistentMapSharesUntouchedBlocks) {
  struct Item {
    std::string key;
    int value;
  };
  struct KeyOf {
    std::string_view operator()(const Item& i) const { return i.key; }
  };
  using Map = internal::FlatPersistentMap<Item, KeyOf>;
  Map map;
  for (int i = 0; i < 5000; ++i) {
    map = map.Set(std::make_shared<const Item>(Item{"k" + std::to_string(i), i}));
  }
  EXPECT_EQ(map.capacity(), 8192u);  // doubled while below 70 % full
  const Map before = map;
  size_t copied = 0;
  const Map after = map.Set(std::make_shared<const Item>(Item{"k42", -1}), &copied);
  // The root (8 block pointers), one middle block (32) and one leaf (32).
  EXPECT_EQ(copied, 8u + 32u + 32u);
  copied = 0;
  const Map erased = after.Erase("k7", &copied);
  EXPECT_GE(copied, 8u + 32u + 32u);
  EXPECT_LE(copied, 8u + 2 * (32u + 32u));  // a probe run may cross into the next leaf
  EXPECT_EQ((*before.Find("k42"))->value, 42);
  EXPECT_EQ((*after.Find("k42"))->value, -1);
  EXPECT_NE(after.Find("k7"), nullptr);
  EXPECT_EQ(erased.Find("k7"), nullptr);
  EXPECT_EQ(erased.size(), 4999u);
  EXPECT_EQ(before.Find("k100")->get(), erased.Find("k100")->get());
  Map emptied = erased;
  for (int i = 0; i < 5000; ++i) {
    emptied = emptied.Erase("k" + std::to_string(i));
  }
  EXPECT_TRUE(emptied.empty());
  EXPECT_EQ(emptied.Find("k1"), nullptr);
  size_t count = 0;
  emptied.ForEach([&](const std::shared_ptr<const Item>&) { ++count; });
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(before.size(), 5000u);  // every version still whole
  EXPECT_EQ((*before.Find("k7"))->value, 7);
}

TEST(CacheTest, KeyHashSpreadsNodeNamesOverTheLowBits) {
  // The trie branches on the lowest 5 bits first: EKS-like names differing
  // in one digit must land in all 32 root slots, evenly.
  std::array<int, 32> root{};
  std::set<uint64_t> hashes;
  for (int i = 0; i < 3200; ++i) {
    const std::string name = "ip-10-16-" + std::to_string(i / 250) + "-" + std::to_string(i % 250) +
                             ".us-west-2.compute.internal";
    const uint64_t hash = internal::KeyHash{}(name);
    hashes.insert(hash);
    ++root[hash & 31];
  }
  EXPECT_EQ(hashes.size(), 3200u);
  for (int count : root) {
    EXPECT_GT(count, 60);
    EXPECT_LT(count, 140);
  }
  EXPECT_NE(internal::KeyHash{}(""), internal::KeyHash{}(std::string_view("\0", 1)));
  EXPECT_NE(internal::KeyHash{}("ab"), internal::KeyHash{}("abb"));
  EXPECT_NE(internal::KeyHash{}("abcdefgh"), internal::KeyHash{}("abcdefghh"));
}

TEST(CacheTest, ConcurrentEventsResolvesAndReservationsNeverDoubleBook) {
  // One thread applies watch events; readers resolve nodes from snapshots;
  // binders race to reserve pods on one node with room for exactly 10 more.
  Fixture f(0ms);
  std::vector<InformerObject> nodes;
  for (int n = 0; n < 50; ++n) {
    nodes.push_back(Node("n" + std::to_string(n)));
  }
  nodes.push_back(Node("tight", 1000));
  std::vector<InformerObject> pending;
  for (int i = 0; i < 200; ++i) {
    pending.push_back(Pod("b" + std::to_string(i), "", {{"cpu", 100}}));
  }
  f.Sync(std::move(nodes), std::move(pending));

  std::atomic<bool> done{false};
  std::thread events([&] {
    for (int i = 0; i < 3000; ++i) {
      const std::string node = "n" + std::to_string(i % 50);
      f.cache.OnUpsert(ResourceKind::kPods,
                       Pod("w" + std::to_string(i % 300), node, {{"cpu", 10}}));
      if (i % 3 == 0) {
        f.cache.OnDelete(ResourceKind::kPods, Pod("w" + std::to_string((i + 150) % 300), "", {}));
      }
      if (i % 100 == 0) {
        f.cache.OnUpsert(ResourceKind::kNodes, Node(node));
      }
    }
    done = true;
  });
  std::vector<std::thread> readers;
  std::atomic<int64_t> resolved{0};
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      std::vector<std::string_view> names = {"n1", "n2", "tight", "missing"};
      std::vector<const model::NodeInfo*> out;
      while (!done) {
        std::shared_ptr<const Snapshot> keep_alive;
        ASSERT_TRUE(f.cache.Resolve(names, out, keep_alive).ok());
        for (const model::NodeInfo* node : out) {
          if (node != nullptr) {
            EXPECT_GE(node->usage->pods, 0);
            EXPECT_GE(node->usage->requested.milli_cpu, 0);
            resolved.fetch_add(1);
          }
        }
      }
    });
  }
  std::atomic<int> reserved{0};
  std::vector<std::thread> binders;
  for (int b = 0; b < 4; ++b) {
    binders.emplace_back([&, b] {
      for (int i = b; i < 200; i += 4) {
        const std::string uid = "uid-b" + std::to_string(i);
        AssumeRequest request{uid, "default", "", "tight", nullptr};
        StatusOr<bool> ok = f.cache.AssumeIfFits(request, CpuFits);
        ASSERT_TRUE(ok.ok()) << ok.status().ToString();
        if (*ok) {
          reserved.fetch_add(1);
          if (i % 8 == 0) {  // some binds fail and are forgotten
            ASSERT_TRUE(f.cache.Forget(uid).ok());
            reserved.fetch_sub(1);
          } else {
            ASSERT_TRUE(f.cache.FinishBinding(uid).ok());
          }
        }
      }
    });
  }
  for (std::thread& t : binders) {
    t.join();
  }
  events.join();
  for (std::thread& t : readers) {
    t.join();
  }
  // 1000m of cpu, 100m per pod: exactly 10 reservations survive, never more.
  EXPECT_EQ(reserved.load(), 10);
  EXPECT_EQ(f.Usage("tight").requested.milli_cpu, 1000);
  EXPECT_EQ(f.Usage("tight").pods, 10);
  EXPECT_GT(resolved.load(), 0);
}

// A request's superseded snapshot is freed by the next update, not by the
// request thread that lets it go.
TEST(CacheTest, ReleasedSnapshotsAreFreedByTheNextUpdate) {
  Fixture f;
  f.Sync({Node("n1")}, {Pod("a", "n1", {{"cpu", 100}})});
  std::shared_ptr<const Snapshot> held = f.cache.snapshot();
  const std::weak_ptr<const Snapshot> watched = held;

  // Still current: releasing it is an ordinary reference drop.
  f.cache.Release(held);
  EXPECT_EQ(held, nullptr);
  EXPECT_FALSE(watched.expired());

  held = f.cache.snapshot();
  f.cache.OnUpsert(ResourceKind::kPods, Pod("a", "n1", {{"cpu", 200}}));  // supersedes it
  f.cache.Release(held);
  EXPECT_EQ(held, nullptr);
  EXPECT_FALSE(watched.expired());  // parked, not freed on this thread
  f.cache.OnUpsert(ResourceKind::kPods, Pod("b", "n1", {{"cpu", 100}}));
  EXPECT_TRUE(watched.expired());

  // Without events, ExpireAssumed (called every second by main) frees them.
  held = f.cache.snapshot();
  const std::weak_ptr<const Snapshot> second = held;
  f.cache.OnDelete(ResourceKind::kPods, Pod("b", "n1", {{"cpu", 100}}));
  f.cache.Release(held);
  EXPECT_FALSE(second.expired());
  f.cache.ExpireAssumed();
  EXPECT_TRUE(second.expired());

  // A snapshot someone else still holds is only dropped by this owner.
  held = f.cache.snapshot();
  std::shared_ptr<const Snapshot> other = held;
  f.cache.OnUpsert(ResourceKind::kPods, Pod("c", "n1", {{"cpu", 100}}));
  f.cache.Release(held);
  f.cache.ExpireAssumed();
  EXPECT_EQ(other->pod_count(), 1u);  // a, still readable
}

}  // namespace

}  // namespace schedext::cluster
