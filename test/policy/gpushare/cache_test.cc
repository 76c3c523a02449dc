// ClusterCache with GPU sharing: per-device counting through pod events and
// reservations, the in-flight bind guard, restart recovery from annotations,
// unhealthy-device ConfigMaps, what Synced() waits for, and GpuShare's node
// summaries as the cache writes them.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "policy/builtin/gpushare/accounting.h"
#include "policy/builtin/gpushare/convention.h"
#include "policy/builtin/gpushare/gpushare.h"
#include "schedext/cluster/cache.h"
#include "schedext/model/name_table.h"
#include "schedext/policy/policy_host.h"
#include "schedext/policy/request_state.h"
#include "testing/model_builders.h"
#include "testing/raw_objects.h"

namespace schedext::cluster {
namespace {

using ::schedext::test::NodeBuilder;
using ::schedext::test::PodBuilder;
using ::schedext::test::TestArena;
using namespace std::chrono_literals;
using policy::gpushare::GpuAccounting;
using policy::gpushare::GpuShareConvention;
using policy::gpushare::GpuUsage;

// GpuShare's state as the cache keeps it: slot 0, the only accounting here.
const GpuUsage& GpuOf(const model::NodeUsage& usage) {
  static const GpuUsage kNothing;
  const auto* state = static_cast<const policy::gpushare::GpuNodeState*>(usage.states.Get(0));
  return state != nullptr ? state->gpu : kNothing;
}

// The cache's options: with GpuShare's accounting and its ConfigMap watch, or
// neither (no GpuShare policy).
CacheOptions Options(bool gpushare, std::chrono::milliseconds ttl,
                     std::function<std::chrono::steady_clock::time_point()> now) {
  CacheOptions options;
  options.assume_ttl = ttl;
  options.now = std::move(now);
  if (gpushare) {
    auto accounting = std::make_shared<GpuAccounting>(GpuShareConvention{});
    options.accountings.push_back(accounting);
    options.watches.push_back(accounting);
  }
  return options;
}

constexpr std::string_view kMem = "aliyun.com/gpu-mem";
constexpr std::string_view kCount = "aliyun.com/gpu-count";
constexpr std::string_view kIndex = "ALIYUN_COM_GPU_MEM_IDX";

// A pod asking for `gpu_mem` (as its container's limit; 0: not a GPU pod) on
// `node` ("" pending), with index annotation `index` (nullopt: none).
InformerObject GpuPod(std::string_view name, std::string_view node, int64_t gpu_mem,
                      std::optional<std::string_view> index, std::string_view phase = "Running") {
  TestArena arena;
  PodBuilder builder(arena);
  builder.Name(name).Namespace("default").Uid("uid-" + std::string(name)).Phase(phase);
  if (!node.empty()) {
    builder.NodeName(node);
  }
  if (gpu_mem > 0) {
    builder.Container({{"cpu", 100}}, {{kMem, gpu_mem}});
  } else {
    builder.Container({{"cpu", 100}});
  }
  if (index.has_value()) {
    builder.Annotation(kIndex, *index);
  }
  return {nullptr, std::make_shared<const model::OwnedPod>(builder.Build()), nullptr};
}

// A node with `count` devices sharing `memory` (GiB) in total.
InformerObject GpuNode(std::string_view name, int64_t count = 4, int64_t memory = 32) {
  TestArena arena;
  model::NodeInfo node = NodeBuilder(arena)
                             .Name(name)
                             .Allocatable("cpu", 8000)
                             .Allocatable("pods", 110)
                             .Capacity(kCount, count)
                             .Capacity(kMem, memory)
                             .Build();
  return {std::make_shared<const model::OwnedNode>(node), nullptr, nullptr};
}

// A ConfigMap; `value` of key "gpus" (nullopt: no such key).
InformerObject ConfigMap(std::string_view namespace_name, std::string_view name,
                         std::optional<std::string_view> value, std::string_view key = "gpus") {
  nlohmann::json data = {{"other", "7"}};
  if (value.has_value()) {
    data[std::string(key)] = std::string(*value);
  }
  const nlohmann::json config_map = {
      {"kind", "ConfigMap"},
      {"apiVersion", "v1"},
      {"metadata",
       {{"name", name}, {"namespace", namespace_name}, {"resourceVersion", "1"}}},
      {"data", std::move(data)}};
  return testing::RawInformerObject(config_map.dump());
}

InformerObject Unhealthy(std::string_view node, std::string_view value) {
  return ConfigMap("kube-system", "unhealthy-gpu-" + std::string(node), value);
}

struct Fixture {
  std::mutex mu;
  std::chrono::steady_clock::time_point now{};
  const bool gpushare;
  ClusterCache cache;

  explicit Fixture(bool with_gpushare = true, std::chrono::milliseconds ttl = 30s)
      : gpushare(with_gpushare),
        cache(Options(with_gpushare, ttl, [this] {
          std::lock_guard<std::mutex> lock(mu);
          return now;
        })) {}
  // The ConfigMap watch's events: through the watch's feed with GpuShare;
  // without it there is no such watch, and ConfigMaps handed to the cache's
  // own handler are ignored.
  void CmReplace(std::vector<InformerObject> objects) {
    if (gpushare) {
      cache.WatchFeed(0).OnReplace(ResourceKind::kObjects, std::move(objects));
    } else {
      cache.OnReplace(ResourceKind::kObjects, std::move(objects));
    }
  }
  void CmUpsert(InformerObject object) {
    if (gpushare) {
      cache.WatchFeed(0).OnUpsert(ResourceKind::kObjects, std::move(object));
    } else {
      cache.OnUpsert(ResourceKind::kObjects, std::move(object));
    }
  }
  void CmDelete(InformerObject object) {
    if (gpushare) {
      cache.WatchFeed(0).OnDelete(ResourceKind::kObjects, std::move(object));
    } else {
      cache.OnDelete(ResourceKind::kObjects, std::move(object));
    }
  }
  void Advance(std::chrono::milliseconds d) {
    std::lock_guard<std::mutex> lock(mu);
    now += d;
  }
  void Sync(std::vector<InformerObject> nodes, std::vector<InformerObject> pods,
            std::vector<InformerObject> config_maps = {}) {
    cache.OnReplace(ResourceKind::kNodes, std::move(nodes));
    cache.OnReplace(ResourceKind::kPods, std::move(pods));
    CmReplace(std::move(config_maps));
  }
  GpuUsage Gpu(std::string_view node) {
    const std::shared_ptr<const Snapshot> snapshot = cache.snapshot();
    const model::NodeUsage* usage = snapshot->FindUsage(node);
    return usage != nullptr ? GpuOf(*usage) : GpuUsage{};
  }
  int64_t Pods(std::string_view node) {
    const std::shared_ptr<const Snapshot> snapshot = cache.snapshot();
    const model::NodeUsage* usage = snapshot->FindUsage(node);
    return usage != nullptr ? usage->pods : 0;
  }
  // The unhealthy mask the node's entry carries (what policies read).
  std::optional<uint64_t> NodeMask(std::string_view node) {
    const std::shared_ptr<const Snapshot> snapshot = cache.snapshot();
    const model::NodeInfo* info = snapshot->FindNode(node);
    if (info == nullptr) {
      return std::nullopt;
    }
    return GpuOf(*info->usage).unhealthy;
  }
};

using Used = std::vector<int64_t>;
using PodsOn = std::vector<int32_t>;

void ExpectGpu(const GpuUsage& gpu, const Used& used, const PodsOn& pods,
               int64_t unassigned, uint64_t unhealthy = 0) {
  EXPECT_EQ(gpu.used, used);
  EXPECT_EQ(gpu.pods, pods);
  EXPECT_EQ(gpu.unassigned, unassigned);
  EXPECT_EQ(gpu.unhealthy, unhealthy);
}

TEST(CacheGpuShareTest, CountsPerDeviceThroughPodEvents) {
  struct Step {
    std::string name;
    std::function<void(ClusterCache&)> apply;
    Used used;
    PodsOn pods;
    int64_t unassigned;
    int64_t node_pods;
  };
  Fixture f;
  f.Sync({GpuNode("n1")}, {
                              GpuPod("a", "n1", 4, "1"),
                              GpuPod("b", "n1", 2, "1"),
                              GpuPod("c", "n1", 3, "3"),
                              GpuPod("d", "", 5, "0"),               // pending: nowhere
                              GpuPod("e", "n1", 6, "0", "Succeeded"),  // terminal: dropped
                              GpuPod("f", "n1", 7, std::nullopt),    // no index: unassigned
                              GpuPod("g", "n1", 0, std::nullopt),    // no GPU at all
                          });
  const std::vector<Step> steps = {
      // device 1: a 4 + b 2 = 6 (2 pods); device 3: c 3; f's 7 unassigned.
      {"start", [](ClusterCache&) {}, {0, 6, 0, 3}, {0, 2, 0, 1}, 7, 5},
      // a's annotation moves it to device 0: device 1 6 − 4 = 2, device 0 + 4.
      {"annotation moves device",
       [](ClusterCache& c) { c.OnUpsert(ResourceKind::kPods, GpuPod("a", "n1", 4, "0")); },
       {4, 2, 0, 3},
       {1, 1, 0, 1},
       7,
       5},
      // f gets device 2: unassigned 7 − 7 = 0, device 2 + 7.
      {"unassigned pod gets an index",
       [](ClusterCache& c) { c.OnUpsert(ResourceKind::kPods, GpuPod("f", "n1", 7, "2")); },
       {4, 2, 7, 3},
       {1, 1, 1, 1},
       0,
       5},
      // c (device 3) deleted: 3 − 3 = 0, the empty last device is trimmed.
      {"delete trims the last device",
       [](ClusterCache& c) { c.OnDelete(ResourceKind::kPods, GpuPod("c", "n1", 3, "3")); },
       {4, 2, 7},
       {1, 1, 1},
       0,
       4},
      // b fails: terminal pods release device 1: 2 − 2 = 0 (an inner zero stays).
      {"terminal releases",
       [](ClusterCache& c) {
         c.OnUpsert(ResourceKind::kPods, GpuPod("b", "n1", 2, "1", "Failed"));
       },
       {4, 0, 7},
       {1, 0, 1},
       0,
       3},
      // The pending d is bound to n1 on device 0: 4 + 5 = 9.
      {"pending pod bound",
       [](ClusterCache& c) { c.OnUpsert(ResourceKind::kPods, GpuPod("d", "n1", 5, "0")); },
       {9, 0, 7},
       {2, 0, 1},
       0,
       4},
      // An index that does not parse counts as unassigned: device 0 9 − 4 = 5.
      {"invalid index is unassigned",
       [](ClusterCache& c) { c.OnUpsert(ResourceKind::kPods, GpuPod("a", "n1", 4, "x")); },
       {5, 0, 7},
       {1, 0, 1},
       4,
       4},
      // f gone: device 2 7 − 7 = 0, devices 2 and 1 both trimmed.
      {"delete trims every empty trailing device",
       [](ClusterCache& c) { c.OnDelete(ResourceKind::kPods, GpuPod("f", "n1", 7, "2")); },
       {5},
       {1},
       4,
       3},
      // A GPU request resized in place: d 5 → 1 on device 0.
      {"resized",
       [](ClusterCache& c) { c.OnUpsert(ResourceKind::kPods, GpuPod("d", "n1", 1, "0")); },
       {1},
       {1},
       4,
       3},
      // The rest goes: nothing is left counted.
      {"all deleted",
       [](ClusterCache& c) {
         c.OnDelete(ResourceKind::kPods, GpuPod("a", "n1", 4, "x"));
         c.OnDelete(ResourceKind::kPods, GpuPod("d", "n1", 1, "0"));
         c.OnDelete(ResourceKind::kPods, GpuPod("g", "n1", 0, std::nullopt));
       },
       {},
       {},
       0,
       0},
  };
  for (const Step& step : steps) {
    SCOPED_TRACE(step.name);
    step.apply(f.cache);
    ExpectGpu(f.Gpu("n1"), step.used, step.pods, step.unassigned);
    EXPECT_EQ(f.Pods("n1"), step.node_pods);
  }
}

TEST(CacheGpuShareTest, PodsOfAnUnknownNodeCountOnItsDevices) {
  Fixture f;
  f.Sync({}, {GpuPod("a", "late", 3, "1")});
  // used [0, 3]: counted under the name before the node exists.
  ExpectGpu(f.Gpu("late"), {0, 3}, {0, 1}, 0);
  f.cache.OnUpsert(ResourceKind::kNodes, GpuNode("late"));
  const std::shared_ptr<const Snapshot> snapshot = f.cache.snapshot();
  const model::NodeInfo* node = snapshot->FindNode("late");
  ASSERT_NE(node, nullptr);
  ExpectGpu(GpuOf(*node->usage), {0, 3}, {0, 1}, 0);
}

// Places the pod on the node's best-fit device and writes the index into its
// annotations, as the GpuShare bind does. `text` keeps the annotation's value
// alive until AssumeIfFits returns (not longer: the cache must copy it).
struct AnnotatingFit {
  GpuShareConvention convention;  // the annotation's key points into it
  std::unique_ptr<std::string> text = std::make_unique<std::string>();
  int calls = 0;

  ClusterCache::FitFn Fn() {
    return [this](model::PodInfo& pod, const model::NodeInfo& node) {
      ++calls;
      const policy::gpushare::GpuPlacement placement = policy::gpushare::PlaceOnGpu(
          policy::gpushare::NodeGpuShape(node, convention), &GpuOf(*node.usage),
          policy::gpushare::GpuMemoryRequest(pod, convention));
      if (placement.device < 0) {
        return false;
      }
      *text = std::to_string(placement.device);
      pod.annotations.Set(convention.index_annotation, *text);
      return true;
    };
  }
};

AssumeRequest Request(std::string_view uid, std::string_view name, std::string_view node,
                      const model::PodInfo* pod = nullptr) {
  return AssumeRequest{uid, "default", name, node, pod};
}

TEST(CacheGpuShareTest, ReservationCountsOnTheDeviceItsFitAnnotates) {
  Fixture f;
  // Two devices of 16 / 2 = 8; a uses 6 of device 0.
  f.Sync({GpuNode("n1", 2, 16)},
         {GpuPod("a", "n1", 6, "0"), GpuPod("p", "", 4, std::nullopt)});
  AnnotatingFit fit;
  // free = [8 − 6, 8] = [2, 8]: 4 fits only on device 1.
  StatusOr<bool> reserved = f.cache.AssumeIfFits(Request("uid-p", "p", "n1"), fit.Fn());
  ASSERT_TRUE(reserved.ok()) << reserved.status().ToString();
  EXPECT_TRUE(*reserved);
  fit.text.reset();  // the reservation must not point into the FitFn's text
  // Counted on device 1 at once: used [6, 4].
  ExpectGpu(f.Gpu("n1"), {6, 4}, {1, 1}, 0);
  {
    const std::shared_ptr<const Snapshot> snapshot = f.cache.snapshot();
    ASSERT_TRUE(snapshot->IsAssumed("uid-p"));
    EXPECT_EQ(snapshot->FindPod("uid-p")->annotations.Find(kIndex),
              std::optional<std::string_view>("1"));
  }
  ASSERT_TRUE(f.cache.FinishBinding("uid-p").ok());
  // The watch lags (still pending, not annotated yet): the reservation stands.
  f.cache.OnUpsert(ResourceKind::kPods, GpuPod("p", "", 4, std::nullopt));
  ExpectGpu(f.Gpu("n1"), {6, 4}, {1, 1}, 0);
  // The annotated, bound object confirms it: replaced, not added — still [6, 4].
  f.cache.OnUpsert(ResourceKind::kPods, GpuPod("p", "n1", 4, "1"));
  ExpectGpu(f.Gpu("n1"), {6, 4}, {1, 1}, 0);
  EXPECT_FALSE(f.cache.snapshot()->IsAssumed("uid-p"));
  EXPECT_EQ(f.cache.Stats().assumed, 0u);
  EXPECT_EQ(f.Pods("n1"), 2);
}

TEST(CacheGpuShareTest, RejectingFitCountsNothing) {
  Fixture f;
  // One device of 8 with 6 used: 4 does not fit.
  f.Sync({GpuNode("n1", 1, 8)}, {GpuPod("a", "n1", 6, "0"), GpuPod("p", "", 4, std::nullopt)});
  AnnotatingFit fit;
  StatusOr<bool> reserved = f.cache.AssumeIfFits(Request("uid-p", "p", "n1"), fit.Fn());
  ASSERT_TRUE(reserved.ok());
  EXPECT_FALSE(*reserved);
  EXPECT_EQ(fit.calls, 1);
  ExpectGpu(f.Gpu("n1"), {6}, {1}, 0);
  EXPECT_FALSE(f.cache.snapshot()->IsAssumed("uid-p"));
}

TEST(CacheGpuShareTest, ForgetAndExpiryReleaseTheDevice) {
  Fixture f;
  f.Sync({GpuNode("n1", 2, 16)},
         {GpuPod("p", "", 4, std::nullopt), GpuPod("q", "", 3, std::nullopt)});
  AnnotatingFit fit;
  // p: both devices empty (free 8, 8), best fit ties to device 0: used [4].
  ASSERT_TRUE(*f.cache.AssumeIfFits(Request("uid-p", "p", "n1"), fit.Fn()));
  ExpectGpu(f.Gpu("n1"), {4}, {1}, 0);
  // The bind failed: released, and the pending pod is back without the annotation.
  ASSERT_TRUE(f.cache.Forget("uid-p").ok());
  ExpectGpu(f.Gpu("n1"), {}, {}, 0);
  {
    const std::shared_ptr<const Snapshot> snapshot = f.cache.snapshot();
    ASSERT_NE(snapshot->FindPod("uid-p"), nullptr);
    EXPECT_FALSE(snapshot->FindPod("uid-p")->annotations.Contains(kIndex));
  }
  // q: device 0 again (free [8, 8]): used [3]; its TTL runs after FinishBinding.
  ASSERT_TRUE(*f.cache.AssumeIfFits(Request("uid-q", "q", "n1"), fit.Fn()));
  ASSERT_TRUE(f.cache.FinishBinding("uid-q").ok());
  ExpectGpu(f.Gpu("n1"), {3}, {1}, 0);
  f.Advance(29s);
  EXPECT_EQ(f.cache.ExpireAssumed(), 0u);
  ExpectGpu(f.Gpu("n1"), {3}, {1}, 0);
  f.Advance(1s);  // 30 s: the TTL
  EXPECT_EQ(f.cache.ExpireAssumed(), 1u);
  ExpectGpu(f.Gpu("n1"), {}, {}, 0);
  EXPECT_EQ(f.Pods("n1"), 0);
}

TEST(CacheGpuShareTest, ASecondBindWhileOneIsInFlightIsRefused) {
  Fixture f;
  f.Sync({GpuNode("n1", 2, 16)}, {GpuPod("p", "", 4, std::nullopt)});
  AnnotatingFit fit;
  ASSERT_TRUE(*f.cache.AssumeIfFits(Request("uid-p", "p", "n1"), fit.Fn()));
  // A duplicate bind while the first one is writing the annotations.
  StatusOr<bool> second = f.cache.AssumeIfFits(Request("uid-p", "p", "n1"), fit.Fn());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().ToString().find(
                "assume pod default/p on n1: a bind of this pod is already in progress"),
            std::string::npos)
      << second.status().ToString();
  EXPECT_EQ(fit.calls, 1);  // refused without asking the FitFn
  ExpectGpu(f.Gpu("n1"), {4}, {1}, 0);
  // Another node is still the older error.
  EXPECT_EQ(f.cache.AssumeIfFits(Request("uid-p", "p", "n2"), fit.Fn()).status().code(),
            StatusCode::kFailedPrecondition);
  // Once the bind finished, a retry is a counted-once success.
  ASSERT_TRUE(f.cache.FinishBinding("uid-p").ok());
  StatusOr<bool> retried = f.cache.AssumeIfFits(Request("uid-p", "p", "n1"), fit.Fn());
  ASSERT_TRUE(retried.ok()) << retried.status().ToString();
  EXPECT_TRUE(*retried);
  EXPECT_EQ(fit.calls, 1);
  ExpectGpu(f.Gpu("n1"), {4}, {1}, 0);
  // After Forget the pod is pending again and may be reserved anew.
  ASSERT_TRUE(f.cache.Forget("uid-p").ok());
  ASSERT_TRUE(*f.cache.AssumeIfFits(Request("uid-p", "p", "n1"), fit.Fn()));
  EXPECT_EQ(fit.calls, 2);
  ExpectGpu(f.Gpu("n1"), {4}, {1}, 0);
}

TEST(CacheGpuShareTest, AssumeCreatesAFinishedReservation) {
  Fixture f;
  f.Sync({GpuNode("n1", 2, 16)}, {});
  TestArena arena;
  const model::PodInfo pod =
      PodBuilder(arena).Name("x").Container({}, {{kMem, 5}}).Annotation(kIndex, "1").Build();
  ASSERT_TRUE(f.cache.Assume(Request("uid-x", "x", "n1", &pod)).ok());
  ExpectGpu(f.Gpu("n1"), {0, 5}, {0, 1}, 0);
  AnnotatingFit fit;
  // Not in flight: AssumeIfFits answers true without counting again.
  StatusOr<bool> again = f.cache.AssumeIfFits(Request("uid-x", "x", "n1"), fit.Fn());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(*again);
  EXPECT_EQ(fit.calls, 0);
  ExpectGpu(f.Gpu("n1"), {0, 5}, {0, 1}, 0);
}

TEST(CacheGpuShareTest, RestartRecoversPerDeviceUsageFromAnnotations) {
  Fixture live;
  live.Sync({GpuNode("n1"), GpuNode("n2", 2, 16)},
            {GpuPod("a", "n1", 4, "0"), GpuPod("b", "n1", 2, "2"), GpuPod("c", "", 3, std::nullopt),
             GpuPod("d", "", 5, std::nullopt), GpuPod("e", "n2", 1, std::nullopt)},
            {Unhealthy("n2", "1")});
  AnnotatingFit fit;
  // c → n1: free [8 − 4, 8, 8 − 2, 8] = [4, 8, 6, 8]; 3 best fits device 0 (4 − 3 = 1).
  ASSERT_TRUE(*live.cache.AssumeIfFits(Request("uid-c", "c", "n1"), fit.Fn()));
  ASSERT_TRUE(live.cache.FinishBinding("uid-c").ok());
  live.cache.OnUpsert(ResourceKind::kPods, GpuPod("c", "n1", 3, "0"));
  // d → n2: device 1 unhealthy, device 0 free 8 − 0 = 8: device 0.
  ASSERT_TRUE(*live.cache.AssumeIfFits(Request("uid-d", "d", "n2"), fit.Fn()));
  ASSERT_TRUE(live.cache.FinishBinding("uid-d").ok());
  live.cache.OnUpsert(ResourceKind::kPods, GpuPod("d", "n2", 5, "0"));
  // b (device 2) is deleted: [7, 0, 2 − 2] trims back to [7].
  live.cache.OnDelete(ResourceKind::kPods, GpuPod("b", "n1", 2, "2"));
  // n1: a 4 + c 3 = 7 on device 0. n2: d 5 on device 0, e's 1 unassigned, device 1 unhealthy.
  ExpectGpu(live.Gpu("n1"), {7}, {2}, 0);
  ExpectGpu(live.Gpu("n2"), {5}, {1}, 1, 0b10);
  EXPECT_EQ(live.cache.Stats().assumed, 0u);

  // A fresh process: only what the API shows. The live cache's pods are the API's
  // objects now (every reservation was confirmed), so they are the relist.
  std::vector<InformerObject> pods;
  live.cache.snapshot()->ForEachPod([&](const model::PodInfo& pod, bool assumed) {
    EXPECT_FALSE(assumed);
    pods.push_back({nullptr, std::make_shared<const model::OwnedPod>(pod), nullptr});
  });
  EXPECT_EQ(pods.size(), 4u);  // a, c, d, e
  Fixture restarted;
  restarted.Sync({GpuNode("n1"), GpuNode("n2", 2, 16)}, std::move(pods), {Unhealthy("n2", "1")});
  for (std::string_view node : {"n1", "n2"}) {
    SCOPED_TRACE(node);
    const GpuUsage before = live.Gpu(node);
    const GpuUsage after = restarted.Gpu(node);
    EXPECT_EQ(after.used, before.used);
    EXPECT_EQ(after.pods, before.pods);
    EXPECT_EQ(after.unassigned, before.unassigned);
    EXPECT_EQ(after.unhealthy, before.unhealthy);
    EXPECT_EQ(restarted.Pods(node), live.Pods(node));
  }
  // A relist of the live cache recounts to the same numbers as well.
  std::vector<InformerObject> relist;
  live.cache.snapshot()->ForEachPod([&](const model::PodInfo& pod, bool) {
    relist.push_back({nullptr, std::make_shared<const model::OwnedPod>(pod), nullptr});
  });
  live.cache.OnReplace(ResourceKind::kPods, std::move(relist));
  ExpectGpu(live.Gpu("n1"), {7}, {2}, 0);
  ExpectGpu(live.Gpu("n2"), {5}, {1}, 1, 0b10);
}

TEST(CacheGpuShareTest, RelistKeepsAnnotatedReservations) {
  Fixture f;
  f.Sync({GpuNode("n1", 2, 16)}, {GpuPod("a", "n1", 6, "0"), GpuPod("p", "", 4, std::nullopt)});
  AnnotatingFit fit;
  // free [2, 8]: p on device 1.
  ASSERT_TRUE(*f.cache.AssumeIfFits(Request("uid-p", "p", "n1"), fit.Fn()));
  // The relist still shows p pending: the reservation (on device 1) is recounted.
  f.cache.OnReplace(ResourceKind::kPods,
                    {GpuPod("a", "n1", 6, "0"), GpuPod("p", "", 4, std::nullopt)});
  ExpectGpu(f.Gpu("n1"), {6, 4}, {1, 1}, 0);
  EXPECT_TRUE(f.cache.snapshot()->IsAssumed("uid-p"));
}

TEST(CacheGpuShareTest, UnhealthyConfigMaps) {
  Fixture f;
  f.Sync({GpuNode("n1"), GpuNode("n2")}, {GpuPod("a", "n1", 4, "0")},
         {
             Unhealthy("n1", "1"),
             Unhealthy("ghost", "0,3"),                     // no such node yet
             ConfigMap("default", "unhealthy-gpu-n2", "0"),  // other namespace
             ConfigMap("kube-system", "broken-gpu-n2", "0"),  // other name
             ConfigMap("kube-system", "unhealthy-gpu-", "0"),  // no node in the name
         });
  EXPECT_EQ(f.NodeMask("n1"), 0b10u);
  EXPECT_EQ(f.NodeMask("n2"), 0u);
  ExpectGpu(f.Gpu("n1"), {4}, {1}, 0, 0b10);
  // The ConfigMap came before its node: applied when the node appears.
  EXPECT_EQ(f.NodeMask("ghost"), std::nullopt);
  f.cache.OnUpsert(ResourceKind::kNodes, GpuNode("ghost"));
  EXPECT_EQ(f.NodeMask("ghost"), 0b1001u);  // devices 0 and 3

  // Updated: " 0, 2 ,x" → devices 0 and 2; the invalid "x" is skipped.
  const std::shared_ptr<const Snapshot> before = f.cache.snapshot();
  f.CmUpsert(Unhealthy("n1", " 0, 2 ,x"));
  EXPECT_EQ(f.NodeMask("n1"), 0b101u);
  EXPECT_EQ(GpuOf(*before->FindNode("n1")->usage).unhealthy, 0b10u);  // snapshots are immutable
  ExpectGpu(f.Gpu("n1"), {4}, {1}, 0, 0b101);  // the counts are untouched

  // Every rebuild of the entry keeps the mask: node update, pod events,
  // relists of nodes and of pods.
  f.cache.OnUpsert(ResourceKind::kNodes, GpuNode("n1", 4, 64));
  EXPECT_EQ(f.NodeMask("n1"), 0b101u);
  f.cache.OnUpsert(ResourceKind::kPods, GpuPod("b", "n1", 2, "1"));
  ExpectGpu(f.Gpu("n1"), {4, 2}, {1, 1}, 0, 0b101);
  f.cache.OnDelete(ResourceKind::kPods, GpuPod("b", "n1", 2, "1"));
  ExpectGpu(f.Gpu("n1"), {4}, {1}, 0, 0b101);
  f.cache.OnReplace(ResourceKind::kPods, {});
  ExpectGpu(f.Gpu("n1"), {}, {}, 0, 0b101);
  f.cache.OnReplace(ResourceKind::kNodes, {GpuNode("n1"), GpuNode("n2"), GpuNode("ghost")});
  EXPECT_EQ(f.NodeMask("n1"), 0b101u);
  EXPECT_EQ(f.NodeMask("ghost"), 0b1001u);
  // A node deleted and re-added gets its mask back.
  f.cache.OnDelete(ResourceKind::kNodes, GpuNode("ghost"));
  f.cache.OnUpsert(ResourceKind::kNodes, GpuNode("ghost"));
  EXPECT_EQ(f.NodeMask("ghost"), 0b1001u);

  // A key other than "gpus", or no key at all: no devices.
  f.CmUpsert(
                   ConfigMap("kube-system", "unhealthy-gpu-n2", "1", "devices"));
  EXPECT_EQ(f.NodeMask("n2"), 0u);
  f.CmUpsert(Unhealthy("n2", "3"));
  EXPECT_EQ(f.NodeMask("n2"), 0b1000u);
  f.CmUpsert(
                   ConfigMap("kube-system", "unhealthy-gpu-n2", std::nullopt));
  EXPECT_EQ(f.NodeMask("n2"), 0u);

  // Events for ConfigMaps that are not unhealthy lists change nothing.
  f.CmUpsert(ConfigMap("default", "unhealthy-gpu-n2", "0"));
  f.CmDelete(ConfigMap("default", "unhealthy-gpu-n1", "0"));
  EXPECT_EQ(f.NodeMask("n1"), 0b101u);
  EXPECT_EQ(f.NodeMask("n2"), 0u);

  // Deleted: the mask is cleared.
  f.CmDelete(Unhealthy("n1", " 0, 2 ,x"));
  EXPECT_EQ(f.NodeMask("n1"), 0u);

  // Replace: the list is the whole truth. ghost's ConfigMap is gone (cleared),
  // n2's is new, n1 has one again.
  f.CmReplace({Unhealthy("n2", "1"), Unhealthy("n1", "63")});
  EXPECT_EQ(f.NodeMask("ghost"), 0u);
  EXPECT_EQ(f.NodeMask("n2"), 0b10u);
  EXPECT_EQ(f.NodeMask("n1"), uint64_t{1} << 63);
  f.CmReplace({});
  EXPECT_EQ(f.NodeMask("n1"), 0u);
  EXPECT_EQ(f.NodeMask("n2"), 0u);
}

TEST(CacheGpuShareTest, UnhealthyMaskOfANodeKnownOnlyByItsPods) {
  Fixture f;
  f.Sync({}, {GpuPod("a", "late", 2, "0")}, {});
  // Only a usage entry exists for "late": it carries the mask too.
  f.CmUpsert(Unhealthy("late", "2"));
  ExpectGpu(f.Gpu("late"), {2}, {1}, 0, 0b100);
  // The last pod leaves (the usage entry goes), the node arrives later: still known.
  f.cache.OnDelete(ResourceKind::kPods, GpuPod("a", "late", 2, "0"));
  EXPECT_EQ(f.cache.snapshot()->FindUsage("late"), nullptr);
  f.cache.OnUpsert(ResourceKind::kNodes, GpuNode("late"));
  EXPECT_EQ(f.NodeMask("late"), 0b100u);
}

TEST(CacheGpuShareTest, SyncedNeedsTheConfigMapListOnlyWithGpuShare) {
  {
    SCOPED_TRACE("gpushare on");
    Fixture f;
    f.cache.OnReplace(ResourceKind::kNodes, {GpuNode("n1")});
    f.cache.OnReplace(ResourceKind::kPods, {GpuPod("p", "", 1, std::nullopt)});
    EXPECT_FALSE(f.cache.Synced());
    EXPECT_FALSE(f.cache.Stats().watches_synced);
    std::vector<const model::NodeInfo*> out;
    std::shared_ptr<const Snapshot> keep_alive;
    const std::vector<std::string_view> names = {"n1"};
    EXPECT_EQ(f.cache.Resolve(names, out, keep_alive).code(), StatusCode::kUnavailable);
    AnnotatingFit fit;
    EXPECT_EQ(f.cache.AssumeIfFits(Request("uid-p", "p", "n1"), fit.Fn()).status().code(),
              StatusCode::kUnavailable);
    f.CmReplace({});
    EXPECT_TRUE(f.cache.Synced());
    const CacheStats stats = f.cache.Stats();
    EXPECT_TRUE(stats.nodes_synced);
    EXPECT_TRUE(stats.pods_synced);
    EXPECT_TRUE(stats.watches_synced);
    EXPECT_TRUE(f.cache.Resolve(names, out, keep_alive).ok());
    EXPECT_TRUE(*f.cache.AssumeIfFits(Request("uid-p", "p", "n1"), fit.Fn()));
  }
  {
    SCOPED_TRACE("gpushare off");
    Fixture f(/*gpushare=*/false);
    f.cache.OnReplace(ResourceKind::kNodes, {GpuNode("n1")});
    EXPECT_FALSE(f.cache.Synced());
    f.cache.OnReplace(ResourceKind::kPods, {});
    EXPECT_TRUE(f.cache.Synced());
    EXPECT_TRUE(f.cache.Stats().watches_synced);  // there is no watch to wait for
    // A ConfigMap list (if something delivered one) changes nothing.
    f.CmReplace({Unhealthy("n1", "0")});
    EXPECT_TRUE(f.cache.Synced());
    EXPECT_TRUE(f.cache.Stats().watches_synced);
  }
}

TEST(CacheGpuShareTest, WithoutGpuShareGpuUsageStaysEmpty) {
  Fixture f(/*gpushare=*/false);
  f.Sync({GpuNode("n1")},
         {GpuPod("a", "n1", 4, "1"), GpuPod("b", "n1", 3, std::nullopt),
          GpuPod("p", "", 2, std::nullopt)},
         {Unhealthy("n1", "0,1")});
  f.CmUpsert(Unhealthy("n1", "2"));
  f.cache.OnUpsert(ResourceKind::kPods, GpuPod("c", "n1", 5, "0"));
  AnnotatingFit fit;
  ASSERT_TRUE(*f.cache.AssumeIfFits(Request("uid-p", "p", "n1"), fit.Fn()));
  f.CmDelete(Unhealthy("n1", "2"));
  // The other accounting still runs: a, b, c and the reserved p.
  EXPECT_EQ(f.Pods("n1"), 4);
  ExpectGpu(f.Gpu("n1"), {}, {}, 0, 0);
  EXPECT_EQ(f.NodeMask("n1"), 0u);
}

TEST(CacheGpuShareTest, ForEachPodVisitsBoundPendingAndReservedPods) {
  Fixture f;
  f.Sync({GpuNode("n1")}, {GpuPod("a", "n1", 1, "0"), GpuPod("p", "", 2, std::nullopt),
                           GpuPod("q", "", 0, std::nullopt), GpuPod("t", "n1", 1, "0", "Failed")});
  AnnotatingFit fit;
  ASSERT_TRUE(*f.cache.AssumeIfFits(Request("uid-p", "p", "n1"), fit.Fn()));
  struct Seen {
    std::string node;
    bool assumed;
  };
  std::map<std::string, Seen> seen;
  f.cache.snapshot()->ForEachPod([&](const model::PodInfo& pod, bool assumed) {
    EXPECT_TRUE(seen.emplace(std::string(pod.uid), Seen{std::string(pod.node_name), assumed})
                    .second)
        << "visited twice: " << pod.uid;
  });
  // a bound, p reserved on n1, q pending; the terminal t is not kept.
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen["uid-a"].node, "n1");
  EXPECT_FALSE(seen["uid-a"].assumed);
  EXPECT_EQ(seen["uid-p"].node, "n1");
  EXPECT_TRUE(seen["uid-p"].assumed);
  EXPECT_EQ(seen["uid-q"].node, "");
  EXPECT_FALSE(seen["uid-q"].assumed);
  EXPECT_EQ(seen.count("uid-t"), 0u);

  // An empty cache visits nothing.
  Fixture empty;
  int calls = 0;
  empty.cache.snapshot()->ForEachPod([&](const model::PodInfo&, bool) { ++calls; });
  EXPECT_EQ(calls, 0);
}


// GpuShare's node summaries (policy/builtin/gpushare/summary.h) as the cache
// writes them: two GpuShare policies (binpack and spread) on one PolicyHost,
// the cache built with its accountings, watch, summaries and frozen names as
// main builds it. Every decision on a stored node must equal the decision on
// a copy of it whose summary is invalidated (which the policy then reads from
// the node's capacity and GPU state).
class GpuSummaryTest : public ::testing::Test {
 protected:
  struct Decision {
    policy::Verdict::Code code;
    std::string reason;
    int64_t binpack;
    int64_t spread;
    bool operator==(const Decision&) const = default;
  };

  void SetUp() override {
    policy::PolicyContext context;
    context.handle = &host_;
    context.names = names_.get();
    binpack_ = MustCreate(R"({"scoring": "binpack"})", context);
    spread_ = MustCreate(R"({"scoring": "spread"})", context);
    ASSERT_NE(binpack_, nullptr);
    ASSERT_NE(spread_, nullptr);
    ASSERT_EQ(host_.summaries().size(), 2u);  // one per instance
    names_->Freeze();
    CacheOptions options;
    options.accountings = host_.accountings();
    options.summaries = host_.summaries();
    for (const policy::PolicyHost::WatchEntry& watch : host_.watches()) {
      options.watches.push_back(watch.handler);
    }
    options.names = names_;
    cache_ = std::make_unique<ClusterCache>(options);
  }

  static std::unique_ptr<policy::Policy> MustCreate(const char* args,
                                                    const policy::PolicyContext& context) {
    StatusOr<std::unique_ptr<policy::Policy>> made =
        policy::NewGpuShare(nlohmann::json::parse(args), context);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    return made.ok() ? std::move(*made) : nullptr;
  }

  void Sync(std::vector<InformerObject> nodes, std::vector<InformerObject> pods,
            std::vector<InformerObject> config_maps = {}) {
    cache_->OnReplace(ResourceKind::kNodes, std::move(nodes));
    cache_->OnReplace(ResourceKind::kPods, std::move(pods));
    cache_->WatchFeed(0).OnReplace(ResourceKind::kObjects, std::move(config_maps));
    ASSERT_TRUE(cache_->Synced());
  }

  // The filter's verdict and both scores of a request of `request`.
  Decision Decide(int64_t request, const model::NodeInfo& node) {
    const model::PodInfo pod = Pod(request);
    Decision decision{};
    policy::RequestState filter_state;
    EXPECT_TRUE(binpack_->AsFilter()->PreFilter(filter_state, pod).ok());
    const policy::Verdict verdict = binpack_->AsFilter()->Filter(filter_state, pod, node);
    decision.code = verdict.code;
    decision.reason = std::string(verdict.reason);  // it views filter_state
    const model::NodeInfo* nodes[] = {&node};
    for (auto [policy, out] : {std::pair{binpack_.get(), &decision.binpack},
                               std::pair{spread_.get(), &decision.spread}}) {
      policy::RequestState state;
      EXPECT_TRUE(policy->AsScorer()->PreScore(state, pod, nodes).ok());
      *out = policy->AsScorer()->Score(state, pod, node);
    }
    return decision;
  }

  model::PodInfo Pod(int64_t request) {
    test::PodBuilder builder(arena_);
    builder.Name("new");
    if (request > 0) {
      builder.Container({}, {{kMem, request}});
    } else {
      builder.Container({{"cpu", 100}});
    }
    return builder.Build();
  }

  // Checks `name`'s decisions for every request against its invalidated
  // copy; returns the decisions (by request) for the caller's own checks.
  std::vector<Decision> ExpectSameAsUnsummarized(std::string_view name) {
    const std::shared_ptr<const Snapshot> snapshot = cache_->snapshot();
    const model::NodeInfo* node = snapshot->FindNode(name);
    EXPECT_NE(node, nullptr) << name;
    if (node == nullptr) {
      return {};
    }
    EXPECT_TRUE(node->has_summary()) << name;
    model::NodeInfo unsummarized = *node;
    unsummarized.summarized_usage = nullptr;
    EXPECT_FALSE(unsummarized.has_summary());
    std::vector<Decision> out;
    for (const int64_t request : Requests()) {
      SCOPED_TRACE(std::string(name) + ", request " + std::to_string(request));
      const Decision summarized = Decide(request, *node);
      EXPECT_EQ(summarized, Decide(request, unsummarized));
      out.push_back(summarized);
    }
    return out;
  }

  // True when the node's answers come from its summary alone: a copy that
  // keeps the summary but has no GPU capacity answers the same.
  bool AnswersFromSummary(std::string_view name) {
    const std::shared_ptr<const Snapshot> snapshot = cache_->snapshot();
    const model::NodeInfo* node = snapshot->FindNode(name);
    if (node == nullptr) {
      ADD_FAILURE() << name;
      return false;
    }
    model::NodeInfo no_capacity = *node;
    no_capacity.capacity = model::ResourceList();
    for (const int64_t request : Requests()) {
      if (Decide(request, *node) != Decide(request, no_capacity)) {
        return false;
      }
    }
    return true;
  }

  static constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  // The largest device the scores take in 64 bits (gpushare.cc's kSmallDevice).
  static constexpr int64_t kSmallDevice = std::numeric_limits<int64_t>::max() / 100 / 64;

  static std::vector<int64_t> Requests() {
    return {0,          1,         2,          3,       4,          5,
            7,          8,         9,          10,      16,         17,
            2000,       kInt32Max, int64_t{1} << 38, int64_t{1} << 40, kSmallDevice};
  }

  policy::PolicyHost host_;
  std::shared_ptr<model::NameTable> names_ = std::make_shared<model::NameTable>();
  std::unique_ptr<policy::Policy> binpack_;
  std::unique_ptr<policy::Policy> spread_;
  std::unique_ptr<ClusterCache> cache_;
  TestArena arena_;
};

TEST_F(GpuSummaryTest, DecisionsEqualTheUnsummarizedNodes) {
  constexpr int64_t kGiB40 = int64_t{1} << 40;
  Sync(
      {
          GpuNode("none", 0, 0),
          GpuNode("memory-no-count", 0, 32),
          GpuNode("one", 1, 16),
          GpuNode("four", 4, 32),
          GpuNode("uneven", 3, 32),  // 10 each, 2 left over
          GpuNode("eight", 8, 80),
          GpuNode("nine", 9, 72),
          GpuNode("twenty", 20, 80),
          GpuNode("int32-edge", 2, 2 * kInt32Max),      // devices of INT32_MAX
          GpuNode("past-int32", 2, 2 * kInt32Max + 2),  // one more each
          GpuNode("large", 1, kGiB40),
          GpuNode("huge", 2, 2 * (kSmallDevice + 1)),
          GpuNode("sick", 4, 32),
          GpuNode("sick-beyond-count", 4, 32),
      },
      {
          GpuPod("one-a", "one", 5, "0"),
          GpuPod("four-a", "four", 3, "0"),
          GpuPod("four-b", "four", 6, "1"),
          GpuPod("four-c", "four", 12, "3"),  // over-committed
          GpuPod("four-d", "four", 2, "5"),   // on a device past the count
          GpuPod("four-e", "four", 4, std::nullopt),  // unassigned
          GpuPod("uneven-a", "uneven", 9, "2"),
          GpuPod("eight-a", "eight", 10, "0"),
          GpuPod("eight-b", "eight", 3, "4"),
          GpuPod("eight-c", "eight", 9, "7"),
          GpuPod("nine-a", "nine", 7, "8"),
          GpuPod("nine-b", "nine", 1, "0"),
          GpuPod("twenty-a", "twenty", 4, "19"),
          GpuPod("twenty-b", "twenty", 3, "2"),
          GpuPod("int32-a", "int32-edge", kInt32Max - 5, "1"),
          GpuPod("past-a", "past-int32", 9, "0"),
          GpuPod("large-a", "large", int64_t{1} << 39, "0"),
          GpuPod("huge-a", "huge", kSmallDevice / 3, "1"),
          GpuPod("sick-a", "sick", 2, "1"),
          GpuPod("beyond-a", "sick-beyond-count", 2, "1"),
      },
      {
          Unhealthy("sick", "0,2"),
          Unhealthy("eight", "3,7"),
          Unhealthy("nine", "8"),
          Unhealthy("sick-beyond-count", "4,63"),
      });
  for (std::string_view name :
       {"none", "memory-no-count", "one", "four", "uneven", "eight", "nine", "twenty",
        "int32-edge", "past-int32", "large", "huge", "sick", "sick-beyond-count"}) {
    ExpectSameAsUnsummarized(name);
  }
  // Up to 8 devices of at most INT32_MAX: answered from the summary alone.
  for (std::string_view name : {"one", "four", "uneven", "eight", "int32-edge", "sick"}) {
    EXPECT_TRUE(AnswersFromSummary(name)) << name;
  }
  // Anything else is read from the node.
  for (std::string_view name : {"nine", "twenty", "past-int32", "large", "huge"}) {
    EXPECT_FALSE(AnswersFromSummary(name)) << name;
  }

  // Spot checks that the cases say what they are meant to (request 4 is at
  // index 4 of Requests()): "four" has free [5, 2, 8, 0] (device 3 is
  // over-committed, device 5 is past the count, 4 GiB unassigned).
  const std::vector<Decision> four = ExpectSameAsUnsummarized("four");
  ASSERT_EQ(four.size(), Requests().size());
  EXPECT_EQ(four[4], (Decision{policy::Verdict::Code::kSuccess, "", 100 * (8 - 1) / 8,
                               100 * (15 - 4) / 32}));
  EXPECT_EQ(four[9].code, policy::Verdict::Code::kUnschedulableAndUnresolvable);  // 10 > 8
  // "sick": devices 0 and 2 unhealthy, device 1 holds 2: free [6, 8] healthy.
  const std::vector<Decision> sick = ExpectSameAsUnsummarized("sick");
  EXPECT_EQ(sick[7], (Decision{policy::Verdict::Code::kSuccess, "", 100, 100 * (14 - 8) / 16}));
  EXPECT_EQ(sick[8], (Decision{policy::Verdict::Code::kUnschedulableAndUnresolvable,
                               "node(s) had no healthy GPU large enough for the pod's "
                               "aliyun.com/gpu-mem",
                               0, 0}));
  // "nine": device 8 unhealthy, device 0 holds 1: the best fit for 7 is device 0.
  const std::vector<Decision> nine = ExpectSameAsUnsummarized("nine");
  EXPECT_EQ(nine[6].binpack, 100);
  EXPECT_EQ(ExpectSameAsUnsummarized("none")[1],
            (Decision{policy::Verdict::Code::kUnschedulableAndUnresolvable,
                      "node(s) had no shared GPU", 0, 0}));
}

TEST_F(GpuSummaryTest, SummariesFollowPodAndConfigMapEvents) {
  Sync({GpuNode("n1", 4, 32), GpuNode("n2", 8, 64)}, {GpuPod("a", "n1", 4, "0")});
  AnnotatingFit fit;
  struct Step {
    std::string name;
    std::function<void()> apply;
    std::string n1_reason_for_8;  // n1's filter reason for a request of 8 ("" passes)
  };
  const std::vector<Step> steps = {
      {"start", [] {}, ""},  // free [4, 8, 8, 8]
      {"pods fill devices 1 and 2",
       [&] {
         cache_->OnUpsert(ResourceKind::kPods, GpuPod("b", "n1", 8, "1"));
         cache_->OnUpsert(ResourceKind::kPods, GpuPod("c", "n1", 5, "2"));
       },
       ""},  // free [4, 0, 3, 8]
      {"device 3 unhealthy", [&] { cache_->WatchFeed(0).OnUpsert(ResourceKind::kObjects,
                                                                 Unhealthy("n1", "3")); },
       "Insufficient aliyun.com/gpu-mem on any one GPU"},
      {"a pod moves to device 2",
       [&] { cache_->OnUpsert(ResourceKind::kPods, GpuPod("a", "n1", 4, "2")); },
       ""},  // free [8, 0, 0 (9 used), -]: 8 fits on device 0
      {"a reservation takes device 0",
       [&] {
         cache_->OnUpsert(ResourceKind::kPods, GpuPod("p", "", 1, std::nullopt));
         StatusOr<bool> reserved = cache_->AssumeIfFits(Request("uid-p", "p", "n1"), fit.Fn());
         ASSERT_TRUE(reserved.ok() && *reserved);
       },
       "Insufficient aliyun.com/gpu-mem on any one GPU"},  // free [7, 0, 0, -]
      {"the reservation is forgotten", [&] { ASSERT_TRUE(cache_->Forget("uid-p").ok()); },
       ""},
      {"pods deleted",
       [&] {
         cache_->OnDelete(ResourceKind::kPods, GpuPod("b", "n1", 8, "1"));
         cache_->OnDelete(ResourceKind::kPods, GpuPod("c", "n1", 5, "2"));
       },
       ""},
      {"every device unhealthy",
       [&] {
         cache_->WatchFeed(0).OnUpsert(ResourceKind::kObjects, Unhealthy("n1", "0,1,2,3"));
       },
       "node(s) had no healthy GPU large enough for the pod's aliyun.com/gpu-mem"},
      {"the node grows to 9 devices (read from the node)",
       [&] { cache_->OnUpsert(ResourceKind::kNodes, GpuNode("n1", 9, 72)); }, ""},
      {"and shrinks to 2 of 4 GiB",
       [&] { cache_->OnUpsert(ResourceKind::kNodes, GpuNode("n1", 2, 8)); },
       "node(s) had no healthy GPU large enough for the pod's aliyun.com/gpu-mem"},
      {"its ConfigMap deleted",
       [&] {
         cache_->WatchFeed(0).OnDelete(ResourceKind::kObjects, Unhealthy("n1", "0,1,2,3"));
       },
       "node(s) had no healthy GPU large enough for the pod's aliyun.com/gpu-mem"},
      {"no GPUs any more", [&] { cache_->OnUpsert(ResourceKind::kNodes, GpuNode("n1", 0, 0)); },
       "node(s) had no shared GPU"},
      {"every pod gone", [&] { cache_->OnReplace(ResourceKind::kPods, {}); },
       "node(s) had no shared GPU"},
  };
  for (const Step& step : steps) {
    SCOPED_TRACE(step.name);
    step.apply();
    ExpectSameAsUnsummarized("n1");
    ExpectSameAsUnsummarized("n2");  // untouched, rebuilt or not
    const std::shared_ptr<const Snapshot> snapshot = cache_->snapshot();
    EXPECT_EQ(Decide(8, *snapshot->FindNode("n1")).reason, step.n1_reason_for_8);
  }
}

}  // namespace
}  // namespace schedext::cluster
