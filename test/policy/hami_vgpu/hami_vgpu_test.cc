#include "policy/builtin/hami_vgpu/hami_vgpu.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <deque>
#include <random>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/builtin/hami_vgpu/accounting.h"
#include "policy/builtin/hami_vgpu/protocol.h"
#include "schedext/policy/policy.h"
#include "schedext/policy/node_summary.h"
#include "schedext/policy/policy_host.h"
#include "testing/model_builders.h"

namespace schedext::policy {
namespace {

using nlohmann::json;
using test::NodeBuilder;
using test::PodBuilder;
using test::TestArena;

// A handle of its own per policy, so that HamiVgpu's state is in slot 0.
PolicyHost& NewHost() {
  static std::deque<PolicyHost>* const hosts = new std::deque<PolicyHost>();
  return hosts->emplace_back();
}

std::unique_ptr<Policy> MustCreate(std::string_view args) {
  PolicyContext context;
  context.handle = &NewHost();
  StatusOr<std::unique_ptr<Policy>> policy = NewHamiVgpu(json::parse(args), context);
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return policy.ok() ? std::move(*policy) : nullptr;
}

// Two V100s on NUMA 0 and a T4 on NUMA 1, in the text form.
constexpr std::string_view kThreeGpus =
    "GPU-0,4,32768,100,NVIDIA-Tesla V100,0,true,0,hami-core:"
    "GPU-1,4,32768,100,NVIDIA-Tesla V100,0,true,1,hami-core:"
    "GPU-2,2,16384,100,NVIDIA-T4,1,true,2,hami-core:";

// A node registering `devices`, with the pods `bound` counted on it the way
// the cluster cache counts them (the accounting's AddPod, slot 0).
model::NodeInfo GpuNode(TestArena& arena, std::string_view name, std::string_view devices,
                        const std::vector<model::PodInfo>& bound = {},
                        std::string_view handshake = "") {
  NodeBuilder builder(arena);
  builder.Name(name).Usage(0, {});
  if (!devices.empty()) {
    builder.Annotation(hami::kRegisterAnnotation, devices);
  }
  if (!handshake.empty()) {
    builder.Annotation(hami::kHandshakeAnnotation, handshake);
  }
  model::NodeInfo node = builder.Build();
  hami::VgpuAccounting accounting;
  std::shared_ptr<const model::NodeState> state;
  for (const model::PodInfo& pod : bound) {
    EXPECT_TRUE(accounting.Counts(pod));
    state = accounting.AddPod(name, state, pod, +1);
  }
  model::NodeUsage usage = *node.usage;
  usage.states.Set(0, std::move(state));
  node.usage = arena.Keep(usage);
  return node;
}

// A pod already placed by HAMi (or schedext) with `allocated`.
model::PodInfo Placed(TestArena& arena, std::string_view allocated) {
  return PodBuilder(arena)
      .Name("placed")
      .Container({}, {{"nvidia.com/gpu", 1}})
      .Annotation(hami::kAllocatedAnnotation, allocated)
      .Build();
}

model::PodInfo VgpuPod(TestArena& arena, int64_t gpus, int64_t memory, int64_t cores = 0) {
  PodBuilder builder(arena);
  builder.Name("p");
  if (memory > 0) {
    builder.Container({}, {{"nvidia.com/gpu", gpus},
                           {"nvidia.com/gpumem", memory},
                           {"nvidia.com/gpucores", cores}});
  } else {
    builder.Container({}, {{"nvidia.com/gpu", gpus}, {"nvidia.com/gpucores", cores}});
  }
  return builder.Build();
}

std::pair<Verdict::Code, std::string> RunFilter(const Policy& policy, const model::PodInfo& pod,
                                                const model::NodeInfo& node) {
  RequestState state;
  EXPECT_TRUE(policy.AsFilter()->PreFilter(state, pod).ok());
  const Verdict verdict = policy.AsFilter()->Filter(state, pod, node);
  return {verdict.code, std::string(verdict.reason)};
}

int64_t RunScore(const Policy& policy, const model::PodInfo& pod, const model::NodeInfo& node) {
  RequestState state;
  const model::NodeInfo* nodes[] = {&node};
  EXPECT_TRUE(policy.AsScorer()->PreScore(state, pod, nodes).ok());
  return policy.AsScorer()->Score(state, pod, node);
}

// The annotations Reserve writes, as a map-like list.
PodAnnotations RunReserve(const Policy& policy, const model::PodInfo& pod,
                          const model::NodeInfo& node) {
  PodAnnotations out;
  const Status status = policy.AsReserver()->Reserve(pod, node, out);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return out;
}

std::string Allocation(const PodAnnotations& annotations) {
  for (const auto& [key, value] : annotations) {
    if (key == hami::kToAllocateAnnotation) {
      return value;
    }
  }
  return "<none>";
}

TEST(HamiVgpuTest, HooksAndArgs) {
  std::unique_ptr<Policy> policy = MustCreate("{}");
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(policy->Name(), "HamiVgpu");
  EXPECT_NE(policy->AsFilter(), nullptr);
  EXPECT_NE(policy->AsScorer(), nullptr);
  EXPECT_NE(policy->AsReserver(), nullptr);
  EXPECT_NE(policy->AsPreempter(), nullptr);
  EXPECT_TRUE(policy->AsFilter()->EvictionCanHelp());
  PolicyContext context;
  context.handle = &NewHost();
  EXPECT_EQ(NewHamiVgpu(json::parse(R"({"gpuSchedulerPolicy": "topology"})"), context)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(NewHamiVgpu(json::parse(R"({"resourceCountName": ""})"), context).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(NewHamiVgpu(json::parse(R"({"colour": 1})"), context).status().code(),
            StatusCode::kInvalidArgument);

  // HAMi's node lock: 5 minutes unless HAMI_NODELOCK_EXPIRE's value is given.
  ASSERT_TRUE(policy->AsReserver()->NodeLock().has_value());
  EXPECT_EQ(policy->AsReserver()->NodeLock()->annotation, "hami.io/mutex.lock");
  EXPECT_EQ(policy->AsReserver()->NodeLock()->expiry, std::chrono::seconds(300));
  std::unique_ptr<Policy> ten = MustCreate(R"({"nodeLockExpirySeconds": 600})");
  ASSERT_NE(ten, nullptr);
  EXPECT_EQ(ten->AsReserver()->NodeLock()->expiry, std::chrono::seconds(600));
  EXPECT_EQ(NewHamiVgpu(json::parse(R"({"nodeLockExpirySeconds": 0})"), context).status().code(),
            StatusCode::kInvalidArgument);
}

// Every profile's instance shares one accounting slot and one route.
TEST(HamiVgpuTest, RegistersOnceThroughTheHandle) {
  PolicyHost& host = NewHost();
  PolicyContext context;
  context.handle = &host;
  ASSERT_TRUE(NewHamiVgpu(json::object(), context).ok());
  ASSERT_TRUE(NewHamiVgpu(json::parse(R"({"nodeSchedulerPolicy": "spread"})"), context).ok());
  EXPECT_EQ(host.accountings().size(), 1U);
  ASSERT_EQ(host.routes().size(), 1U);
  EXPECT_EQ(host.routes()[0].path, "/hami/inspect");
  std::string body;
  // No cluster attached to this host: no snapshot.
  EXPECT_EQ(host.routes()[0].handler("", body), 503);
  EXPECT_EQ(body, R"({"Error":"hami inspect: the cluster cache has not synced yet"})" "\n");
}

TEST(HamiVgpuTest, FilterVerdictsAreFixedTexts) {
  TestArena arena;
  std::unique_ptr<Policy> policy = MustCreate("{}");
  ASSERT_NE(policy, nullptr);
  using Code = Verdict::Code;
  struct Case {
    std::string name;
    model::PodInfo pod;
    model::NodeInfo node;
    Code code;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"no vGPU asked", PodBuilder(arena).Container({{"cpu", 100}}).Build(),
       GpuNode(arena, "n", ""), Code::kSuccess, ""},
      {"fits", VgpuPod(arena, 1, 3000), GpuNode(arena, "n", kThreeGpus), Code::kSuccess, ""},
      {"no register annotation", VgpuPod(arena, 1, 3000), GpuNode(arena, "n", ""),
       Code::kUnschedulableAndUnresolvable, "node(s) have no HAMi vGPU devices"},
      {"stale handshake", VgpuPod(arena, 1, 3000),
       GpuNode(arena, "n", kThreeGpus, {}, "Requesting_2024-01-23 04:30:04"),
       Code::kUnschedulableAndUnresolvable, "node(s) have no HAMi vGPU devices"},
      {"answered handshake", VgpuPod(arena, 1, 3000),
       GpuNode(arena, "n", kThreeGpus, {}, "Reported_2024-01-23 04:30:04"), Code::kSuccess, ""},
      {"more vGPUs than devices", VgpuPod(arena, 4, 100), GpuNode(arena, "n", kThreeGpus),
       Code::kUnschedulableAndUnresolvable, "Insufficient nvidia.com/gpu"},
      {"memory beyond every device", VgpuPod(arena, 1, 40000), GpuNode(arena, "n", kThreeGpus),
       Code::kUnschedulable, "Insufficient nvidia.com/gpumem"},
      {"memory used up", VgpuPod(arena, 1, 20000),
       GpuNode(arena, "n", kThreeGpus,
               {Placed(arena, "GPU-0,NVIDIA,20000,0:;"), Placed(arena, "GPU-1,NVIDIA,20000,0:;"),
                Placed(arena, "GPU-2,NVIDIA,1,0:;")}),
       Code::kUnschedulable, "Insufficient nvidia.com/gpumem"},
      {"split count used up", VgpuPod(arena, 1, 10),
       GpuNode(arena, "n", "GPU-9,2,32768,100,NVIDIA-A100,0,true:",
               {Placed(arena, "GPU-9,NVIDIA,10,0:;"), Placed(arena, "GPU-9,NVIDIA,10,0:;")}),
       Code::kUnschedulable, "Insufficient nvidia.com/gpu"},
      {"cores used up", VgpuPod(arena, 1, 10, 50),
       GpuNode(arena, "n", "GPU-9,4,32768,100,NVIDIA-A100,0,true:",
               {Placed(arena, "GPU-9,NVIDIA,10,60:;")}),
       Code::kUnschedulable, "Insufficient nvidia.com/gpucores"},
      {"exclusive on a shared device", VgpuPod(arena, 1, 10, 100),
       GpuNode(arena, "n", "GPU-9,4,32768,100,NVIDIA-A100,0,true:",
               {Placed(arena, "GPU-9,NVIDIA,10,0:;")}),
       Code::kUnschedulable, "node(s) have no GPU free for exclusive use"},
      {"unhealthy", VgpuPod(arena, 1, 10),
       GpuNode(arena, "n", "GPU-9,4,32768,100,NVIDIA-A100,0,false:"),
       Code::kUnschedulableAndUnresolvable, "node(s) have no healthy GPU for the request"},
      {"wrong type", PodBuilder(arena)
                         .Container({}, {{"nvidia.com/gpu", 1}})
                         .Annotation(hami::kUseTypeAnnotation, "H100")
                         .Build(),
       GpuNode(arena, "n", kThreeGpus), Code::kUnschedulableAndUnresolvable,
       "node(s) have no GPU of the requested type or mode"},
      {"excluded uuids", PodBuilder(arena)
                             .Container({}, {{"nvidia.com/gpu", 1}})
                             .Annotation(hami::kNoUseUuidAnnotation, "GPU-0,GPU-1,GPU-2")
                             .Build(),
       GpuNode(arena, "n", kThreeGpus), Code::kUnschedulableAndUnresolvable,
       "node(s) have no GPU of the requested UUIDs"},
      {"NUMA binding: two on NUMA 0 only", PodBuilder(arena)
                                               .Container({}, {{"nvidia.com/gpu", 3},
                                                               {"nvidia.com/gpumem", 10}})
                                               .Annotation(hami::kNumaBindAnnotation, "true")
                                               .Build(),
       GpuNode(arena, "n", kThreeGpus), Code::kUnschedulable,
       "node(s) cannot place the GPUs on one NUMA node"},
      {"without NUMA binding the three fit", VgpuPod(arena, 3, 10),
       GpuNode(arena, "n", kThreeGpus), Code::kSuccess, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto [code, reason] = RunFilter(*policy, c.pod, c.node);
    EXPECT_EQ(code, c.code);
    EXPECT_EQ(reason, c.reason);
  }
}

TEST(HamiVgpuTest, NeedsTheClusterCache) {
  TestArena arena;
  std::unique_ptr<Policy> policy = MustCreate("{}");
  const model::NodeInfo node = NodeBuilder(arena).Name("n").NoUsage().Build();
  EXPECT_EQ(RunFilter(*policy, VgpuPod(arena, 1, 10), node).first, Verdict::Code::kError);
}

// GPU-level choice within a NUMA node: spread (HAMi's default) takes the
// emptiest device, binpack the fullest; the pod's annotation overrides the
// profile.
TEST(HamiVgpuTest, ReserveWritesHamisAnnotationsOnTheChosenDevices) {
  TestArena arena;
  // GPU-1 holds 10000 MiB already; GPU-0 is empty.
  const model::NodeInfo node =
      GpuNode(arena, "node-7",
              "GPU-0,4,32768,100,NVIDIA-Tesla V100,0,true,0,hami-core:"
              "GPU-1,4,32768,100,NVIDIA-Tesla V100,0,true,1,hami-core:",
              {Placed(arena, "GPU-1,NVIDIA,10000,20:;")});
  std::unique_ptr<Policy> spread = MustCreate("{}");
  std::unique_ptr<Policy> binpack = MustCreate(R"({"gpuSchedulerPolicy": "binpack"})");
  const model::PodInfo pod = VgpuPod(arena, 1, 3000, 30);
  const PodAnnotations annotations = RunReserve(*spread, pod, node);
  ASSERT_EQ(annotations.size(), 6U);
  EXPECT_EQ(annotations[0].first, "hami.io/vgpu-devices-to-allocate");
  EXPECT_EQ(annotations[0].second, "GPU-0,NVIDIA,3000,30:;");
  EXPECT_EQ(annotations[1].first, "hami.io/vgpu-devices-allocated");
  EXPECT_EQ(annotations[1].second, "GPU-0,NVIDIA,3000,30:;");
  EXPECT_EQ(annotations[2], (std::pair<std::string, std::string>{"hami.io/vgpu-node", "node-7"}));
  EXPECT_EQ(annotations[3].first, "hami.io/vgpu-time");
  EXPECT_EQ(annotations[4].first, "hami.io/bind-time");
  EXPECT_EQ(annotations[3].second, annotations[4].second);
  EXPECT_GT(std::stoll(annotations[3].second), 1'700'000'000);
  EXPECT_EQ(annotations[5],
            (std::pair<std::string, std::string>{"hami.io/bind-phase", "allocating"}));

  EXPECT_EQ(Allocation(RunReserve(*binpack, pod, node)), "GPU-1,NVIDIA,3000,30:;");
  const model::PodInfo annotated = PodBuilder(arena)
                                       .Container({}, {{"nvidia.com/gpu", 1},
                                                       {"nvidia.com/gpumem", 3000},
                                                       {"nvidia.com/gpucores", 30}})
                                       .Annotation(hami::kGpuPolicyAnnotation, "binpack")
                                       .Build();
  EXPECT_EQ(Allocation(RunReserve(*spread, annotated, node)), "GPU-1,NVIDIA,3000,30:;");
}

// Entries for every container, init containers first, empty where a
// container asks for none; a multi-GPU request takes distinct devices; the
// percentage is of each chosen device.
TEST(HamiVgpuTest, ReserveEncodesEveryContainer) {
  TestArena arena;
  const model::NodeInfo node = GpuNode(arena, "n", kThreeGpus);
  std::unique_ptr<Policy> policy = MustCreate("{}");
  const model::PodInfo pod =
      PodBuilder(arena)
          .InitContainer({{"cpu", 10}})
          .Container({}, {{"nvidia.com/gpu", 2}, {"nvidia.com/gpumem-percentage", 50}})
          .Container({{"cpu", 10}})
          .Container({}, {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 100}})
          .Build();
  // Spread walks HAMi's sorted list from its end: the highest NUMA node
  // first (the T4), then the emptiest V100, the later-registered on ties;
  // the last container finds the T4 first again, with a split left.
  EXPECT_EQ(Allocation(RunReserve(*policy, pod, node)),
            ";GPU-2,NVIDIA,8192,0:GPU-1,NVIDIA,16384,0:;;GPU-2,NVIDIA,100,0:;");
}

// Explain's per-node detail: the freest device against the largest vGPU the
// pod asks for, "short by" when memory is missing (what the
// SchedextUnschedulable event ranks nearest nodes by), and why a node has
// no devices.
TEST(HamiVgpuTest, DetailNamesTheFreestDeviceAndTheShortfall) {
  TestArena arena;
  std::unique_ptr<Policy> policy = MustCreate("{}");
  const model::NodeInfo node =
      GpuNode(arena, "n", kThreeGpus,
              {Placed(arena, "GPU-0,NVIDIA,30000,20:;"), Placed(arena, "GPU-1,NVIDIA,20000,0:;")});
  const auto detail = [&](const model::PodInfo& pod, const model::NodeInfo& n) {
    RequestState state;
    EXPECT_TRUE(policy->AsFilter()->PreFilter(state, pod).ok());
    return policy->AsFilter()->Detail(state, pod, n);
  };
  // 12768 MiB free on GPU-1 (of 32768), 16384 on the T4: the T4 is freest.
  const model::PodInfo big = VgpuPod(arena, 1, 20000);
  EXPECT_EQ(RunFilter(*policy, big, node).second, "Insufficient nvidia.com/gpumem");
  EXPECT_EQ(detail(big, node),
            "3 NVIDIA device(s); the freest usable one has 16384 of 16384 MiB, 100 of 100 cores "
            "and 2 of 2 vGPUs free; the pod asks up to 20000 MiB for one vGPU, short by 3616 MiB");
  // A percentage is of the freest device's memory.
  const model::PodInfo half = PodBuilder(arena)
                                  .Name("half")
                                  .Container({}, {{"nvidia.com/gpu", 1},
                                                  {"nvidia.com/gpumem-percentage", 50},
                                                  {"nvidia.com/gpucores", 0}})
                                  .Build();
  EXPECT_EQ(detail(half, node),
            "3 NVIDIA device(s); the freest usable one has 16384 of 16384 MiB, 100 of 100 cores "
            "and 2 of 2 vGPUs free; the pod asks up to 8192 MiB for one vGPU");
  EXPECT_EQ(detail(big, GpuNode(arena, "bare", "")),
            "no hami.io/node-nvidia-register annotation");
  EXPECT_EQ(detail(big, GpuNode(arena, "stale", kThreeGpus, {}, "Deleted_2024-01-01 00:00:00")),
            "the device plugin's hami.io/node-handshake is stale and allocatable nvidia.com/gpu "
            "is 0");
}

// Two devices of 10,000 MiB split 4 ways: a (6,000 MiB) on GPU-A, b (5,000)
// and c (4,000) on GPU-B, d on neither. An 8,000 MiB vGPU fits only once
// GPU-B is emptied (GPU-A keeps 4,000 free even without a), so b and c are
// needed and a, the most important, is spared; d frees nothing here.
TEST(HamiVgpuTest, PreemptionNeedsTheVictimsWhoseDeviceMakesRoom) {
  TestArena arena;
  std::unique_ptr<Policy> policy = MustCreate("{}");
  const std::string_view two =
      "GPU-A,4,10000,100,NVIDIA-A10,0,true,0,hami-core:GPU-B,4,10000,100,NVIDIA-A10,0,true,1,"
      "hami-core:";
  const auto placed = [&](std::string_view name, std::string_view allocated) {
    PodBuilder builder(arena);
    builder.Name(name).Container({}, {{"nvidia.com/gpu", 1}});
    if (!allocated.empty()) builder.Annotation(hami::kAllocatedAnnotation, allocated);
    return builder.Build();
  };
  const model::PodInfo a = placed("a", "GPU-A,NVIDIA,6000,0:;");
  const model::PodInfo b = placed("b", "GPU-B,NVIDIA,5000,0:;");
  const model::PodInfo c = placed("c", "GPU-B,NVIDIA,4000,0:;");
  const model::PodInfo d = placed("d", "");
  const model::NodeInfo node = GpuNode(arena, "n", two, {a, b, c});
  const auto select = [&](const model::PodInfo& pod, const std::vector<model::PodInfo>& victims,
                          std::vector<uint8_t>& needed) {
    needed.assign(victims.size(), 1);
    RequestState state;
    return policy->AsPreempter()->SelectVictims(state, pod, node, victims, needed);
  };
  std::vector<uint8_t> needed;
  const model::PodInfo big = VgpuPod(arena, 1, 8000);
  ASSERT_EQ(RunFilter(*policy, big, node).first, Verdict::Code::kUnschedulable);
  EXPECT_TRUE(select(big, {a, b, c, d}, needed).ok());
  EXPECT_EQ(needed, (std::vector<uint8_t>{0, 1, 1, 0}));
  // With a the least important, emptying GPU-A is the way: b and c stay.
  EXPECT_TRUE(select(big, {d, c, b, a}, needed).ok());
  EXPECT_EQ(needed, (std::vector<uint8_t>{0, 0, 0, 1}));
  // Only one of GPU-B's pods proposed: not enough anywhere, the node drops.
  Verdict verdict = select(big, {b, d}, needed);
  EXPECT_EQ(verdict.code, Verdict::Code::kUnschedulable);
  EXPECT_EQ(verdict.reason, "Insufficient nvidia.com/gpumem");
  // Larger than any device: no eviction helps.
  verdict = select(VgpuPod(arena, 1, 12000), {a, b, c}, needed);
  EXPECT_FALSE(verdict.ok());
  // A pod without vGPUs needs none of them.
  EXPECT_TRUE(select(PodBuilder(arena).Container({{"cpu", 100}}).Build(), {a, b}, needed).ok());
  EXPECT_EQ(needed, (std::vector<uint8_t>{0, 0}));
}

TEST(HamiVgpuTest, ReservationsCountAndReleaseThroughTheAccounting) {
  TestArena arena;
  std::unique_ptr<Policy> policy = MustCreate("{}");
  const std::string_view one = "GPU-9,1,32768,100,NVIDIA-A100,0,true:";
  const model::PodInfo pod = VgpuPod(arena, 1, 1000);
  const PodAnnotations annotations = RunReserve(*policy, pod, GpuNode(arena, "n", one));
  ASSERT_EQ(Allocation(annotations), "GPU-9,NVIDIA,1000,0:;");
  // The reserved pod as the cache counts it: with the annotations.
  PodBuilder reserved(arena);
  reserved.Name("reserved").Container({}, {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 1000}});
  for (const auto& [key, value] : annotations) {
    reserved.Annotation(key, value);
  }
  const model::PodInfo counted = reserved.Build();
  // Counted while its bind phase says allocating, with no time limit: HAMi
  // has no allocating-phase timeout either.
  ASSERT_EQ(counted.annotations.Find(hami::kBindPhaseAnnotation).value_or(""),
            hami::kBindPhaseAllocating);
  EXPECT_TRUE(hami::VgpuAccounting().Counts(counted));
  const model::NodeInfo full = GpuNode(arena, "n", one, {counted});
  EXPECT_EQ(RunFilter(*policy, pod, full),
            (std::pair<Verdict::Code, std::string>{Verdict::Code::kUnschedulable,
                                                   "Insufficient nvidia.com/gpu"}));
  // Removing it (deleted, finished, expired) frees the device.
  hami::VgpuAccounting accounting;
  std::shared_ptr<const model::NodeState> state = accounting.AddPod("n", nullptr, counted, +1);
  ASSERT_NE(state, nullptr);
  EXPECT_EQ(accounting.AddPod("n", state, counted, -1), nullptr);
  EXPECT_FALSE(accounting.Counts(pod));
}

TEST(HamiVgpuTest, NodeScoreBinpackAndSpread) {
  TestArena arena;
  const std::string_view one = "GPU-9,10,10000,100,NVIDIA-A100,0,true:";
  const model::NodeInfo empty = GpuNode(arena, "a", one);
  const model::NodeInfo half =
      GpuNode(arena, "b", one,
              {Placed(arena, "GPU-9,NVIDIA,4000,40:;"), Placed(arena, "GPU-9,NVIDIA,1000,10:;"),
               Placed(arena, "GPU-9,NVIDIA,0,0:;"), Placed(arena, "GPU-9,NVIDIA,0,0:;")});
  const model::PodInfo pod = VgpuPod(arena, 1, 1000, 10);
  std::unique_ptr<Policy> binpack = MustCreate("{}");
  std::unique_ptr<Policy> spread = MustCreate(R"({"nodeSchedulerPolicy": "spread"})");
  // After placing: empty node 1/10 + 10/100 + 1000/10000 = 0.3 → 3 of 30 → 10;
  // the other 5/10 + 60/100 + 6000/10000 = 1.7 → 17 of 30 → 57.
  EXPECT_EQ(RunScore(*binpack, pod, empty), 10);
  EXPECT_EQ(RunScore(*binpack, pod, half), 57);
  EXPECT_EQ(RunScore(*spread, pod, empty), 90);
  EXPECT_EQ(RunScore(*spread, pod, half), 43);
  EXPECT_EQ(RunScore(*binpack, PodBuilder(arena).Container({{"cpu", 1}}).Build(), half), 0);
}

// A register annotation of `n` random devices (the text form or JSON), some
// not NVIDIA, MIG or unhealthy, some with numbers a summary cannot hold.
std::string RandomDevices(std::mt19937& rng, std::string_view node, int n) {
  const auto pick = [&](int bound) { return static_cast<int>(rng() % static_cast<unsigned>(bound)); };
  const bool as_json = pick(2) == 0;
  std::string out = as_json ? "[" : "";
  for (int d = 0; d < n; ++d) {
    const std::string uuid = "GPU-" + std::string(node) + "-" + std::to_string(d);
    const int64_t count = pick(20) == 0 ? 300 : 1 + pick(10);
    const int64_t memory = pick(20) == 0 ? 0 : 1024 * (1 + pick(80));
    const int64_t cores = pick(20) == 0 ? 40000 : (pick(4) == 0 ? 50 : 100);
    const std::string type = pick(10) == 0 ? "AMD-MI300" : "NVIDIA-A100";
    const std::string mode = pick(10) == 0 ? "mig" : "hami-core";
    const int64_t numa = pick(20) == 0 ? 200 : pick(2);
    const bool healthy = pick(8) != 0;
    if (as_json) {
      out += std::string(d > 0 ? "," : "") + R"({"id":")" + uuid + R"(","index":)" +
             std::to_string(d) + R"(,"count":)" + std::to_string(count) + R"(,"devmem":)" +
             std::to_string(memory) + R"(,"devcore":)" + std::to_string(cores) +
             R"(,"type":")" + type + R"(","numa":)" + std::to_string(numa) + R"(,"mode":")" +
             mode + R"(","health":)" + (healthy ? "true" : "false") + "}";
    } else {
      out += uuid + "," + std::to_string(count) + "," + std::to_string(memory) + "," +
             std::to_string(cores) + "," + type + "," + std::to_string(numa) + "," +
             (healthy ? "true" : "false") + "," + std::to_string(d) + "," + mode + ":";
    }
  }
  return as_json ? out + "]" : out;
}

// "YYYY-MM-DD hh:mm:ss" in UTC, as HAMi's device plugin writes the handshake.
std::string DateTime(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// Nodes summarized as the cluster cache summarizes them decide exactly as
// the same nodes decoded from their annotations: random devices, tenants,
// handshakes and pods, including what the summary leaves to the decoder
// (more than 8 devices, numbers beyond its fields) and pods whose rules name
// devices (which always decode).
TEST(HamiVgpuTest, SummarizedNodesDecideAsDecoded) {
  TestArena arena;
  std::mt19937 rng(2024);
  const auto pick = [&](int bound) { return static_cast<int>(rng() % static_cast<unsigned>(bound)); };
  PolicyHost& host = NewHost();
  PolicyContext context;
  context.handle = &host;
  StatusOr<std::unique_ptr<Policy>> binpack = NewHamiVgpu(json::object(), context);
  StatusOr<std::unique_ptr<Policy>> spread = NewHamiVgpu(
      json{{"nodeSchedulerPolicy", "spread"}, {"gpuSchedulerPolicy", "binpack"}}, context);
  ASSERT_TRUE(binpack.ok() && spread.ok());
  ASSERT_EQ(host.summaries().size(), 2u) << "each profile's instance has its summary";
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::string handshakes[] = {"", "Reported_" + DateTime(now),
                                    "Requesting_" + DateTime(now - 5),
                                    "Requesting_" + DateTime(now - 3600), "Deleted_" + DateTime(now)};

  std::vector<model::PodInfo> pods;
  for (int i = 0; i < 40; ++i) {
    PodBuilder builder(arena);
    builder.Name("p" + std::to_string(i));
    const auto request = [&]() {
      std::vector<std::pair<std::string_view, int64_t>> r = {{"nvidia.com/gpu", 1 + pick(3)}};
      if (pick(3) == 0) {
        r.emplace_back("nvidia.com/gpumem-percentage", 10 * (1 + pick(10)));
      } else {
        r.emplace_back("nvidia.com/gpumem", 1024 * (1 + pick(40)));
      }
      r.emplace_back("nvidia.com/gpucores", pick(3) == 0 ? 100 : 10 * pick(5));
      return r;
    };
    if (pick(4) == 0) {
      const auto r = request();
      builder.InitContainer({r[0], r[1], r[2]});
    }
    const auto r = request();
    builder.Container({}, {r[0], r[1], r[2]});
    if (pick(3) == 0) {
      const auto r2 = request();
      builder.Container({}, {r2[0], r2[1], r2[2]});
    }
    if (pick(4) == 0) {
      builder.Annotation(hami::kNumaBindAnnotation, "true");
    }
    if (pick(4) == 0) {
      // Names no device of any node: the same decision, through the decoder.
      builder.Annotation(hami::kNoUseUuidAnnotation, "GPU-none");
    }
    pods.push_back(builder.Build());
  }

  size_t summarized = 0, fits = 0, cases = 0;
  for (int i = 0; i < 150; ++i) {
    const std::string name = "n" + std::to_string(i);
    const int devices = pick(12) == 0 ? 9 + pick(4) : pick(9);
    std::vector<model::PodInfo> tenants;
    for (int t = pick(6); t > 0 && devices > 0; --t) {
      tenants.push_back(Placed(arena, arena.Intern("GPU-" + name + "-" +
                                                 std::to_string(pick(devices + 1)) + ",NVIDIA," +
                                                 std::to_string(1024 * pick(30)) + "," +
                                                 std::to_string(10 * pick(6)) + ":;")));
    }
    model::NodeInfo plain =
        GpuNode(arena, arena.Intern(name), arena.Intern(RandomDevices(rng, name, devices)), tenants,
                arena.Intern(handshakes[pick(5)]));
    if (pick(2) == 0) {
      plain.allocatable.Set(arena.Intern("nvidia.com/gpu"), devices);
    }
    model::NodeInfo with_summary = plain;
    WriteNodeSummaries(host.summaries(), with_summary);
    summarized += with_summary.has_summary() ? 1 : 0;
    for (const model::PodInfo& pod : pods) {
      SCOPED_TRACE("node " + std::to_string(i) + ", pod " + std::string(pod.name));
      for (const std::unique_ptr<Policy>* policy : {&*binpack, &*spread}) {
        const auto verdict = RunFilter(**policy, pod, with_summary);
        EXPECT_EQ(verdict, RunFilter(**policy, pod, plain));
        EXPECT_EQ(RunScore(**policy, pod, with_summary), RunScore(**policy, pod, plain));
        fits += verdict.first == Verdict::Code::kSuccess ? 1 : 0;
        ++cases;
      }
    }
  }
  EXPECT_EQ(summarized, 150u);
  // Both outcomes are well represented.
  EXPECT_GT(fits, cases / 5);
  EXPECT_LT(fits, cases * 4 / 5);
}

}  // namespace
}  // namespace schedext::policy
