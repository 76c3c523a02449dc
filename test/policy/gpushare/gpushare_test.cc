#include "policy/builtin/gpushare/gpushare.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "policy/builtin/gpushare/accounting.h"
#include "schedext/config/config.h"
#include "schedext/model/quantity.h"
#include "schedext/pipeline/profile.h"
#include "schedext/policy/policy.h"
#include "schedext/policy/policy_host.h"
#include "schedext/policy/registry.h"
#include "testing/model_builders.h"

namespace schedext::policy {
namespace {

using nlohmann::json;
using test::NodeBuilder;
using test::PodBuilder;
using test::TestArena;

constexpr std::string_view kGpuMem = "aliyun.com/gpu-mem";
constexpr std::string_view kGpuCount = "aliyun.com/gpu-count";
constexpr std::string_view kIndex = "ALIYUN_COM_GPU_MEM_IDX";

// A handle of its own for each policy a test builds (so GpuShare's state is in
// slot 0), kept for the test binary's lifetime.
PolicyHost& NewHost() {
  static std::deque<PolicyHost>* const hosts = new std::deque<PolicyHost>();
  return hosts->emplace_back();
}

std::unique_ptr<Policy> MustCreate(std::string_view args, PolicyContext context = {}) {
  if (context.handle == nullptr) {
    context.handle = &NewHost();
  }
  StatusOr<std::unique_ptr<Policy>> policy = NewGpuShare(json::parse(args), context);
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return policy.ok() ? std::move(*policy) : nullptr;
}

// A node of `count` devices holding `total` GPU memory together, with `used`
// counted on its devices and the devices of mask `unhealthy` unhealthy.
// `count` 0 leaves out the GPU capacity altogether.
model::NodeInfo GpuNode(TestArena& arena, std::string_view name, int64_t count, int64_t total,
                        const std::vector<int64_t>& used, uint64_t unhealthy = 0) {
  NodeBuilder builder(arena);
  builder.Name(name).Allocatable({{"cpu", 4000}, {"pods", 110}}).Usage(0, {});
  if (count > 0) {
    builder.Capacity(kGpuMem, total).Capacity(kGpuCount, count);
  }
  model::NodeInfo node = builder.Build();
  model::NodeUsage usage = *node.usage;
  // Where GpuShare's accounting keeps it: the policy's slot, 0 for a policy
  // built on a handle of its own (MustCreate, MustBuildProfile).
  auto state = std::make_shared<gpushare::GpuNodeState>();
  state->gpu.used = used;
  state->gpu.pods.assign(used.size(), 1);
  state->gpu.unhealthy = unhealthy;
  usage.states.Set(0, std::move(state));
  node.usage = arena.Keep(usage);
  return node;
}

// Two devices of 8 GiB.
model::NodeInfo TwoByEight(TestArena& arena, std::string_view name,
                           const std::vector<int64_t>& used, uint64_t unhealthy = 0) {
  return GpuNode(arena, name, 2, 16, used, unhealthy);
}

// A pod whose one container is limited to `memory` GPU memory (none when 0).
model::PodInfo GpuPod(TestArena& arena, int64_t memory, std::optional<int> device = std::nullopt) {
  PodBuilder builder(arena);
  builder.Name("p");
  if (memory > 0) {
    builder.Container({}, {{kGpuMem, memory}});
  } else {
    builder.Container({{"cpu", 100}});
  }
  if (device.has_value()) {
    builder.Annotation(kIndex, std::to_string(*device));
  }
  return builder.Build();
}

// The verdict's code and reason; the reason is copied because it points into
// the request state, which goes at the end of the call.
std::pair<Verdict::Code, std::string> RunFilter(const Policy& policy, const model::PodInfo& pod,
                                                const model::NodeInfo& node) {
  const FilterHook* filter = policy.AsFilter();
  EXPECT_NE(filter, nullptr);
  RequestState state;
  EXPECT_TRUE(filter->PreFilter(state, pod).ok());
  const Verdict verdict = filter->Filter(state, pod, node);
  return {verdict.code, std::string(verdict.reason)};
}

TEST(GpuShareTest, HasEveryHook) {
  std::unique_ptr<Policy> policy = MustCreate("{}");
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(policy->Name(), "GpuShare");
  ASSERT_NE(policy->AsFilter(), nullptr);
  EXPECT_TRUE(policy->AsFilter()->EvictionCanHelp());
  EXPECT_NE(policy->AsScorer(), nullptr);
  EXPECT_NE(policy->AsPreempter(), nullptr);
  EXPECT_NE(policy->AsReserver(), nullptr);
}

// Filter's reasons are the same for every node and request (kube-scheduler
// counts nodes per distinct reason); Detail has the node's numbers.
constexpr std::string_view kNoRoom = "Insufficient aliyun.com/gpu-mem on any one GPU";
constexpr std::string_view kNoHealthyGpu =
    "node(s) had no healthy GPU large enough for the pod's aliyun.com/gpu-mem";
constexpr std::string_view kNoSharedGpu = "node(s) had no shared GPU";

TEST(GpuShareTest, FilterVerdicts) {
  TestArena arena;
  struct Case {
    std::string name;
    model::PodInfo pod;
    model::NodeInfo node;
    Verdict::Code want_code;
    std::string_view want_reason;
    std::string want_detail;
  };
  const std::vector<Case> cases = {
      // free {5, 2}: device 0 holds 4.
      {"fits on a partly used device", GpuPod(arena, 4), TwoByEight(arena, "n", {3, 6}),
       Verdict::Code::kSuccess, "", ""},
      {"fits exactly", GpuPod(arena, 8), TwoByEight(arena, "n", {8}), Verdict::Code::kSuccess, "",
       ""},
      {"nothing counted yet", GpuPod(arena, 8), TwoByEight(arena, "n", {}), Verdict::Code::kSuccess,
       "", ""},
      {"no device has room", GpuPod(arena, 4), TwoByEight(arena, "n", {5, 6}),
       Verdict::Code::kUnschedulable, kNoRoom,
       "needs 4 GiB on one GPU; largest free 3 GiB, short by 1 GiB"},
      {"no device has room, less free", GpuPod(arena, 4), TwoByEight(arena, "n", {7, 6}),
       Verdict::Code::kUnschedulable, kNoRoom,
       "needs 4 GiB on one GPU; largest free 2 GiB, short by 2 GiB"},
      // Device 1 is empty but unhealthy; healthy device 0 is as large, so
      // evicting its pods could help.
      {"only an unhealthy device has room", GpuPod(arena, 4), TwoByEight(arena, "n", {8, 0}, 0b10),
       Verdict::Code::kUnschedulable, kNoRoom,
       "needs 4 GiB on one GPU; largest free 0 GiB, short by 4 GiB"},
      {"every device unhealthy", GpuPod(arena, 4), TwoByEight(arena, "n", {0, 0}, 0b11),
       Verdict::Code::kUnschedulableAndUnresolvable, kNoHealthyGpu,
       "needs 4 GiB on one GPU; all 2 GPU(s) unhealthy"},
      {"devices too small", GpuPod(arena, 10), TwoByEight(arena, "n", {}),
       Verdict::Code::kUnschedulableAndUnresolvable, kNoHealthyGpu,
       "needs 10 GiB on one GPU; its 2 GPU(s) hold 8 GiB each"},
      {"no GPUs", GpuPod(arena, 1), GpuNode(arena, "n", 0, 0, {}),
       Verdict::Code::kUnschedulableAndUnresolvable, kNoSharedGpu, ""},
      {"memory but no count", GpuPod(arena, 1),
       NodeBuilder(arena).Name("n").Capacity(kGpuMem, 16).Usage(0, {}).Build(),
       Verdict::Code::kUnschedulableAndUnresolvable, kNoSharedGpu, ""},
      {"pod without GPU memory passes a node without GPUs", GpuPod(arena, 0),
       GpuNode(arena, "n", 0, 0, {}), Verdict::Code::kSuccess, "", ""},
      {"pod without GPU memory passes a full node", GpuPod(arena, 0),
       TwoByEight(arena, "n", {8, 8}), Verdict::Code::kSuccess, "", ""},
      // Large amounts: the reason is the same text, the detail the numbers.
      {"large request, large free", GpuPod(arena, 2000), GpuNode(arena, "n", 1, 4000, {2976}),
       Verdict::Code::kUnschedulable, kNoRoom,
       "needs 2000 GiB on one GPU; largest free 1024 GiB, short by 976 GiB"},
      {"over-committed device has nothing free", GpuPod(arena, 1), GpuNode(arena, "n", 1, 8, {9}),
       Verdict::Code::kUnschedulable, kNoRoom,
       "needs 1 GiB on one GPU; largest free 0 GiB, short by 1 GiB"},
      {"no usage", GpuPod(arena, 1), NodeBuilder(arena).Name("n").Capacity(kGpuMem, 8).Build(),
       Verdict::Code::kError,
       "GpuShare needs schedext's cluster cache (no Kubernetes API connection)", ""},
      {"no usage, pod without GPU memory", GpuPod(arena, 0), NodeBuilder(arena).Name("n").Build(),
       Verdict::Code::kError,
       "GpuShare needs schedext's cluster cache (no Kubernetes API connection)", ""},
  };
  std::unique_ptr<Policy> policy = MustCreate("{}");
  ASSERT_NE(policy, nullptr);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RequestState state;
    ASSERT_TRUE(policy->AsFilter()->PreFilter(state, c.pod).ok());
    const Verdict got = policy->AsFilter()->Filter(state, c.pod, c.node);
    EXPECT_EQ(got.code, c.want_code);
    EXPECT_EQ(got.reason, c.want_reason);
    EXPECT_EQ(policy->AsFilter()->Detail(state, c.pod, c.node), c.want_detail);
  }
}

// Whatever the request and the node's free amounts, a rejection is one of
// three texts: the scheduler's event counts nodes per text.
TEST(GpuShareTest, ReasonsAreAFixedSet) {
  TestArena arena;
  std::unique_ptr<Policy> policy = MustCreate("{}");
  ASSERT_NE(policy, nullptr);
  std::set<std::string> reasons;
  for (int request = 1; request <= 20; ++request) {
    const model::PodInfo pod = GpuPod(arena, request);
    RequestState state;
    ASSERT_TRUE(policy->AsFilter()->PreFilter(state, pod).ok());
    for (int64_t used = 0; used <= 9; ++used) {
      for (uint64_t unhealthy : {0b00, 0b10, 0b11}) {
        const model::NodeInfo node = TwoByEight(arena, "n", {used, used / 2}, unhealthy);
        const Verdict v = policy->AsFilter()->Filter(state, pod, node);
        if (!v.ok()) reasons.insert(std::string(v.reason));
      }
    }
    const Verdict none = policy->AsFilter()->Filter(state, pod, GpuNode(arena, "c", 0, 0, {}));
    reasons.insert(std::string(none.reason));
  }
  EXPECT_EQ(reasons, (std::set<std::string>{std::string(kNoRoom), std::string(kNoHealthyGpu),
                                            std::string(kNoSharedGpu)}));
}

TEST(GpuShareTest, FilterWithoutPreFilterIsAnError) {
  TestArena arena;
  std::unique_ptr<Policy> policy = MustCreate("{}");
  ASSERT_NE(policy, nullptr);
  RequestState state;
  const model::PodInfo pod = GpuPod(arena, 1);
  EXPECT_EQ(policy->AsFilter()->Filter(state, pod, TwoByEight(arena, "n", {})).code,
            Verdict::Code::kError);
}

TEST(GpuShareTest, FollowsTheConfiguredConvention) {
  TestArena arena;
  std::unique_ptr<Policy> policy = MustCreate(
      R"({"memoryResource": "example.com/vram", "countResource": "example.com/gpus",
          "indexAnnotation": "example.com/gpu-index", "unit": "MiB"})");
  ASSERT_NE(policy, nullptr);

  model::NodeInfo node = NodeBuilder(arena)
                             .Name("n")
                             .Capacity("example.com/vram", 2048)
                             .Capacity("example.com/gpus", 2)
                             .Usage(0, {})
                             .Build();
  const model::PodInfo pod = PodBuilder(arena).Container({}, {{"example.com/vram", 2000}}).Build();
  // The default resource names mean nothing here.
  const model::PodInfo default_named = GpuPod(arena, 1);

  EXPECT_EQ(RunFilter(*policy, pod, node),
            std::make_pair(Verdict::Code::kUnschedulableAndUnresolvable,
                           std::string("node(s) had no healthy GPU large enough for the pod's "
                                       "example.com/vram")));
  EXPECT_EQ(RunFilter(*policy, default_named, node).first, Verdict::Code::kSuccess);
  EXPECT_EQ(RunFilter(*policy, pod, GpuNode(arena, "m", 0, 0, {})).second, kNoSharedGpu);
}

std::vector<int64_t> Scores(const Policy& policy, const model::PodInfo& pod,
                            const std::vector<model::NodeInfo>& nodes) {
  const ScoreHook* scorer = policy.AsScorer();
  EXPECT_NE(scorer, nullptr);
  const std::vector<const model::NodeInfo*> pointers = test::NodePointers(nodes);
  RequestState state;
  EXPECT_TRUE(scorer->PreScore(state, pod, pointers).ok());
  std::vector<int64_t> scores;
  for (const model::NodeInfo* node : pointers) {
    scores.push_back(scorer->Score(state, pod, *node));
  }
  scorer->Normalize(state, scores);
  return scores;
}

TEST(GpuShareTest, ScoresBinpackAndSpread) {
  TestArena arena;
  const std::vector<model::NodeInfo> nodes = {
      TwoByEight(arena, "tight", {6, 0}),       // free {2, 8}
      TwoByEight(arena, "half", {3, 0}),        // free {5, 8}
      TwoByEight(arena, "empty", {}),           // free {8, 8}
      TwoByEight(arena, "full", {8, 8}),        // does not fit
      GpuNode(arena, "none", 0, 0, {}),         // no GPUs
      TwoByEight(arena, "sick", {0, 0}, 0b10),  // free {8}, device 1 unhealthy
  };
  const model::PodInfo pod = GpuPod(arena, 2);
  struct Case {
    std::string args;
    std::vector<int64_t> want;
  };
  const std::vector<Case> cases = {
      // 100 × (8 − free after) / 8 on the best-fit device: free after 0, 3, 6, -, -, 6.
      {"{}", {100, 62, 25, 0, 0, 25}},
      {R"({"scoring": "binpack"})", {100, 62, 25, 0, 0, 25}},
      // 100 × (Σ free − 2) / Σ device memory, healthy devices only:
      // 8/16, 11/16, 14/16, -, -, 6/8.
      {R"({"scoring": "spread"})", {50, 68, 87, 0, 0, 75}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    std::unique_ptr<Policy> policy = MustCreate(c.args);
    ASSERT_NE(policy, nullptr);
    EXPECT_EQ(Scores(*policy, pod, nodes), c.want);
    // A pod without GPU memory is neutral everywhere.
    EXPECT_EQ(Scores(*policy, GpuPod(arena, 0), nodes), std::vector<int64_t>(nodes.size(), 0));
  }
}

// What a node of the many-node score test holds.
struct NodeSpec {
  int64_t count = 0;
  int64_t total = 0;
  std::vector<int64_t> used;
  uint64_t unhealthy = 0;
  bool state = true;  // a GPU state in GpuShare's slot (else nothing counted)
  bool usage = true;  // any usage at all (else schedext without its cache)
};

// The documented score (gpushare.h), computed on the spec alone.
int64_t ExpectedScore(const NodeSpec& spec, int64_t request, bool spread) {
  const int64_t count = std::min<int64_t>(spec.count, 64);
  const int64_t device_memory = count > 0 ? spec.total / count : 0;
  if (request == 0 || count <= 0 || device_memory <= 0) {
    return 0;
  }
  const bool counted = spec.usage && spec.state;
  auto used_on = [&](int64_t d) {
    return counted && d < static_cast<int64_t>(spec.used.size()) ? spec.used[d] : 0;
  };
  auto healthy = [&](int64_t d) { return !counted || ((spec.unhealthy >> d) & 1U) == 0; };
  int64_t best_after = -1;
  model::Int128 free_sum = 0;
  model::Int128 total = 0;
  for (int64_t d = 0; d < count; ++d) {
    if (!healthy(d)) {
      continue;
    }
    const int64_t free = std::max<int64_t>(0, device_memory - used_on(d));
    if (free >= request && (best_after < 0 || free - request < best_after)) {
      best_after = free - request;
    }
    free_sum += free;
    total += device_memory;
  }
  if (best_after < 0) {
    return 0;
  }
  return static_cast<int64_t>(spread ? 100 * (free_sum - request) / total
                                     : model::Int128(100) * (device_memory - best_after) /
                                           device_memory);
}

// Amounts near the int64 limits: where 100 × a node's sums leaves 64 bits,
// and just below it.
TEST(GpuShareTest, ScoresHugeDevicesExactly) {
  TestArena arena;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kSmall = kMax / 100 / 64;  // the largest device scored in 64 bits
  const std::vector<NodeSpec> specs = {
      {1, kSmall, {kSmall / 3}, 0, true, true},
      {1, kSmall + 1, {kSmall / 3}, 0, true, true},
      {1, kMax, {kMax / 3}, 0, true, true},
      {2, kMax, {kMax / 2 - 10, 0}, 0, true, true},
      {64, 64 * kSmall, {kSmall - 1}, 0, true, true},
      {64, 64 * (kSmall + 1), {kSmall}, 0, true, true},
      {64, 64 * kSmall, {}, 0, true, true},  // 100 × Σ free just fits in 64 bits
      {64, 64 * (kSmall + 1), {}, 0, true, true},  // ... and just does not
      {64, kMax, {kMax / 64 - 1, 5, kMax / 64}, uint64_t{1} << 63, true, true},
      {3, kMax, {kMax, kMax / 2, 1}, 0, true, true},  // over-committed devices
  };
  std::vector<model::NodeInfo> nodes;
  for (size_t i = 0; i < specs.size(); ++i) {
    nodes.push_back(GpuNode(arena, "n" + std::to_string(i), specs[i].count, specs[i].total,
                            specs[i].used, specs[i].unhealthy));
  }
  for (const bool spread : {false, true}) {
    std::unique_ptr<Policy> policy =
        MustCreate(spread ? R"({"scoring": "spread"})" : R"({"scoring": "binpack"})");
    ASSERT_NE(policy, nullptr);
    for (const int64_t request : {int64_t{1}, int64_t{7}, kSmall / 2, kMax / 4}) {
      SCOPED_TRACE(std::string(spread ? "spread" : "binpack") + ", request " +
                   std::to_string(request));
      std::vector<int64_t> want;
      for (const NodeSpec& spec : specs) {
        want.push_back(ExpectedScore(spec, request, spread));
      }
      EXPECT_EQ(Scores(*policy, GpuPod(arena, request), nodes), want);
    }
  }
  // Spot checks of the reference itself: 100 × (k/3 + 1) / k on device 0 of
  // the first node; (Σ free − 7) / Σ device memory on the fourth.
  EXPECT_EQ(ExpectedScore(specs[0], 1, false), 33);
  EXPECT_EQ(ExpectedScore(specs[3], 7, false), 99);
  EXPECT_EQ(ExpectedScore(specs[3], 7, true), 50);
}

// The node a NodeSpec describes.
model::NodeInfo SpecNode(TestArena& arena, const std::string& name, const NodeSpec& spec) {
  if (!spec.usage) {
    return NodeBuilder(arena)
        .Name(name)
        .Capacity(kGpuMem, spec.total)
        .Capacity(kGpuCount, spec.count)
        .NoUsage()
        .Build();
  }
  if (!spec.state) {
    return NodeBuilder(arena)
        .Name(name)
        .Capacity(kGpuMem, spec.total)
        .Capacity(kGpuCount, spec.count)
        .Usage(1, {})
        .Build();
  }
  return GpuNode(arena, name, spec.count, spec.total, spec.used, spec.unhealthy);
}

// Varied nodes: 0-8 devices of 4-16 GiB with a remainder, used amounts at
// times over-committed or past the count, some unhealthy masks, some nodes
// with nothing counted or no usage at all.
std::vector<NodeSpec> RandomSpecs(int n, uint64_t seed) {
  auto next = [&](uint64_t bound) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((seed >> 33) % bound);
  };
  std::vector<NodeSpec> specs;
  for (int i = 0; i < n; ++i) {
    NodeSpec spec;
    spec.count = next(9);  // 0: no GPUs
    spec.total = spec.count * (4 + next(13)) + next(3);
    for (int64_t d = next(spec.count + 2); d > 0; --d) {
      spec.used.push_back(next(18));
    }
    spec.unhealthy = next(4) == 0 ? static_cast<uint64_t>(next(256)) : 0;
    spec.state = next(5) != 0;
    spec.usage = next(9) != 0;
    specs.push_back(spec);
  }
  return specs;
}

// PreScore scores every node ahead of the per-node calls; Score must answer
// the same for every node whatever order, repetition or thread it is called
// in, and for nodes PreScore never saw.
TEST(GpuShareTest, PreScoredNodesScoreAsEachNodeAlone) {
  TestArena arena;
  const std::vector<NodeSpec> specs = RandomSpecs(57, 12345);
  std::vector<model::NodeInfo> nodes;
  for (size_t i = 0; i < specs.size(); ++i) {
    nodes.push_back(SpecNode(arena, "n" + std::to_string(i), specs[i]));
  }
  const std::vector<const model::NodeInfo*> pointers = test::NodePointers(nodes);
  const model::NodeInfo outsider = TwoByEight(arena, "outsider", {5, 1});
  const NodeSpec outsider_spec{2, 16, {5, 1}, 0, true, true};

  for (const bool spread : {false, true}) {
    std::unique_ptr<Policy> policy =
        MustCreate(spread ? R"({"scoring": "spread"})" : R"({"scoring": "binpack"})");
    ASSERT_NE(policy, nullptr);
    const ScoreHook* scorer = policy->AsScorer();
    for (const int64_t request : {0, 1, 3, 6, 9}) {
      SCOPED_TRACE(std::string(spread ? "spread" : "binpack") + ", request " +
                   std::to_string(request));
      const model::PodInfo pod = GpuPod(arena, request);
      std::vector<int64_t> want;
      for (const NodeSpec& spec : specs) {
        want.push_back(ExpectedScore(spec, request, spread));
      }
      // The nodes are varied enough that the scores are, too.
      if (request == 3) {
        std::vector<int64_t> distinct = want;
        std::sort(distinct.begin(), distinct.end());
        distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
        EXPECT_GE(distinct.size(), 8U);
      }
      auto prescored = [&]() {
        auto state = std::make_unique<RequestState>();
        EXPECT_TRUE(scorer->PreScore(*state, pod, pointers).ok());
        return state;
      };
      {  // In PreScore's order, as the pipeline calls it.
        const auto state = prescored();
        for (size_t i = 0; i < nodes.size(); ++i) {
          EXPECT_EQ(scorer->Score(*state, pod, nodes[i]), want[i]) << "node " << i;
        }
        // Again: past the end of PreScore's nodes.
        EXPECT_EQ(scorer->Score(*state, pod, nodes[0]), want[0]);
      }
      {  // Backwards, each node twice, and one PreScore never saw.
        const auto state = prescored();
        EXPECT_EQ(scorer->Score(*state, pod, outsider),
                  ExpectedScore(outsider_spec, request, spread));
        for (size_t i = nodes.size(); i-- > 0;) {
          EXPECT_EQ(scorer->Score(*state, pod, nodes[i]), want[i]) << "node " << i;
          EXPECT_EQ(scorer->Score(*state, pod, nodes[i]), want[i]) << "node " << i;
        }
      }
      {  // Skipping every other node, then the skipped ones.
        const auto state = prescored();
        for (size_t i = 0; i < nodes.size(); i += 2) {
          EXPECT_EQ(scorer->Score(*state, pod, nodes[i]), want[i]) << "node " << i;
        }
        for (size_t i = 1; i < nodes.size(); i += 2) {
          EXPECT_EQ(scorer->Score(*state, pod, nodes[i]), want[i]) << "node " << i;
        }
      }
      {  // Without PreScore.
        RequestState state;
        for (size_t i = 0; i < nodes.size(); ++i) {
          EXPECT_EQ(scorer->Score(state, pod, nodes[i]), want[i]) << "node " << i;
        }
      }
      {  // Two threads scoring every node in order on one state.
        const auto state = prescored();
        std::vector<int64_t> got[2];
        std::vector<std::thread> threads;
        for (std::vector<int64_t>& out : got) {
          threads.emplace_back([&, out = &out]() {
            for (const model::NodeInfo& node : nodes) {
              out->push_back(scorer->Score(*state, pod, node));
            }
          });
        }
        for (std::thread& thread : threads) {
          thread.join();
        }
        EXPECT_EQ(got[0], want);
        EXPECT_EQ(got[1], want);
      }
    }
  }
}

// Nodes summarized as the cluster cache summarizes them (WriteNodeSummaries
// with the host's registrations) decide exactly as the same nodes without a
// summary: random nodes, and the unusual ones the summary leaves to the node
// (more than 8 devices, devices beyond 32 bits, negative used amounts).
TEST(GpuShareTest, SummarizedNodesDecideAsUnsummarized) {
  TestArena arena;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  std::vector<NodeSpec> specs = RandomSpecs(200, 777);
  const std::vector<NodeSpec> unusual = {
      {8, 8 * kInt32Max, {kInt32Max - 1, 0, 5}, 0b10000001, true, true},
      {8, 8 * kInt32Max + 8, {1}, 0, true, true},
      {9, 72, {1, 2, 3, 4, 5, 6, 7, 8, 9}, 0b100000000, true, true},
      {64, kMax, {kMax / 64 - 1, 5, kMax / 64}, uint64_t{1} << 63, true, true},
      {2, 16, {-3, 4}, 0, true, true},  // inconsistent counts: more than the device free
      {2, 16, {kMax, -5}, 0b01, true, true},  // device 1: 13 free of 8
      {1, 16, {}, uint64_t{1} << 40, true, true},  // unhealthy past the count
  };
  specs.insert(specs.end(), unusual.begin(), unusual.end());
  PolicyHost& host = NewHost();
  PolicyContext context;
  context.handle = &host;
  std::unique_ptr<Policy> binpack = MustCreate(R"({"scoring": "binpack"})", context);
  std::unique_ptr<Policy> spread = MustCreate(R"({"scoring": "spread"})", context);
  ASSERT_NE(binpack, nullptr);
  ASSERT_NE(spread, nullptr);
  ASSERT_EQ(host.summaries().size(), 2u);
  size_t summarized = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const model::NodeInfo plain = SpecNode(arena, "n" + std::to_string(i), specs[i]);
    model::NodeInfo with_summary = plain;
    WriteNodeSummaries(host.summaries(), with_summary);
    summarized += with_summary.has_summary() ? 1 : 0;
    for (const int64_t request : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{6}, int64_t{9},
                                  int64_t{17}, kInt32Max, kMax / 4}) {
      SCOPED_TRACE("node " + std::to_string(i) + ", request " + std::to_string(request));
      const model::PodInfo pod = GpuPod(arena, request);
      EXPECT_EQ(RunFilter(*binpack, pod, with_summary), RunFilter(*binpack, pod, plain));
      for (const Policy* policy : {binpack.get(), spread.get()}) {
        const ScoreHook* scorer = policy->AsScorer();
        RequestState state;
        const model::NodeInfo* one[] = {&with_summary};
        ASSERT_TRUE(scorer->PreScore(state, pod, one).ok());
        EXPECT_EQ(scorer->Score(state, pod, with_summary), scorer->Score(state, pod, plain));
        EXPECT_EQ(scorer->Score(state, pod, plain),
                  ExpectedScore(specs[i], request, policy == spread.get()));
      }
    }
  }
  // Every node with a usage got its summary (the rest have none to check).
  EXPECT_GT(summarized, specs.size() * 3 / 4);
}

// A victim: a bound pod using `memory` on `device`.
model::PodInfo Victim(TestArena& arena, std::string_view name, int64_t memory,
                      std::optional<int> device) {
  PodBuilder builder(arena);
  builder.Name(name).Container({{"cpu", 100}}, {{kGpuMem, memory}});
  if (device.has_value()) {
    builder.Annotation(kIndex, std::to_string(*device));
  }
  return builder.Build();
}

TEST(GpuShareTest, SelectsVictimsOnOneDevice) {
  TestArena arena;
  struct Case {
    std::string name;
    int64_t request;
    model::NodeInfo node;
    std::vector<model::PodInfo> victims;  // most important first
    Verdict::Code want_code;
    std::vector<uint8_t> want_needed;  // when kept
  };
  const std::vector<Case> cases = {
      // Device 0 needs three of its four 2 GiB victims for 6 GiB; device 1
      // needs its one 7 GiB victim (1 + 7 >= 6).
      {"the device needing the fewest victims",
       6,
       TwoByEight(arena, "n", {8, 7}),
       {Victim(arena, "a", 2, 0), Victim(arena, "b", 2, 0), Victim(arena, "c", 2, 0),
        Victim(arena, "d", 2, 0), Victim(arena, "e", 7, 1)},
       Verdict::Code::kSuccess,
       {0, 0, 0, 0, 1}},
      {"ties go to the lowest index",
       4,
       TwoByEight(arena, "n", {8, 8}),
       {Victim(arena, "a", 8, 1), Victim(arena, "b", 8, 0)},
       Verdict::Code::kSuccess,
       {0, 1}},
      // Either 4 GiB victim frees enough: the more important one stays.
      {"reprieves the more important victim",
       4,
       GpuNode(arena, "n", 1, 8, {8}),
       {Victim(arena, "important", 4, 0), Victim(arena, "less", 4, 0)},
       Verdict::Code::kSuccess,
       {0, 1}},
      // The two small ones free 4 GiB together: the big one stays.
      {"reprieves the important victim when less important ones suffice together",
       4,
       GpuNode(arena, "n", 1, 8, {8}),
       {Victim(arena, "big", 4, 0), Victim(arena, "small", 2, 0), Victim(arena, "tiny", 2, 0)},
       Verdict::Code::kSuccess,
       {0, 1, 1}},
      // The small one alone would not do: the important one goes.
      {"keeps what is needed whatever its importance",
       4,
       GpuNode(arena, "n", 1, 8, {8}),
       {Victim(arena, "big", 4, 0), Victim(arena, "small", 2, 0)},
       Verdict::Code::kSuccess,
       {1, 0}},
      // 2 GiB free already + 2 from the less important victim.
      {"free memory counts",
       4,
       GpuNode(arena, "n", 1, 8, {6}),
       {Victim(arena, "a", 4, 0), Victim(arena, "b", 2, 0)},
       Verdict::Code::kSuccess,
       {0, 1}},
      {"fits without evicting anyone",
       4,
       GpuNode(arena, "n", 1, 8, {2}),
       {Victim(arena, "a", 2, 0)},
       Verdict::Code::kSuccess,
       {0}},
      // Victims only free memory on the device they name.
      {"victims on other devices and without an index do not help",
       4,
       TwoByEight(arena, "n", {8, 8}),
       {Victim(arena, "a", 4, std::nullopt), Victim(arena, "b", 2, 1)},
       Verdict::Code::kUnschedulable,
       {}},
      {"not enough even after evicting every victim",
       4,
       GpuNode(arena, "n", 1, 8, {8}),
       {Victim(arena, "a", 2, 0)},
       Verdict::Code::kUnschedulable,
       {}},
      {"victim on an unhealthy device",
       4,
       TwoByEight(arena, "n", {8, 8}, 0b01),
       {Victim(arena, "a", 8, 0)},
       Verdict::Code::kUnschedulable,
       {}},
      {"devices too small",
       10,
       TwoByEight(arena, "n", {8, 8}),
       {Victim(arena, "a", 8, 0)},
       Verdict::Code::kUnschedulable,
       {}},
      {"no GPUs",
       1,
       GpuNode(arena, "n", 0, 0, {}),
       {Victim(arena, "a", 8, 0)},
       Verdict::Code::kUnschedulable,
       {}},
      // 8 − (10 − 4) = 2 < 4: an over-committed device frees only what
      // exceeds its over-commitment.
      {"over-committed device",
       4,
       GpuNode(arena, "n", 1, 8, {10}),
       {Victim(arena, "a", 4, 0)},
       Verdict::Code::kUnschedulable,
       {}},
      {"pod without GPU memory needs no victim",
       0,
       TwoByEight(arena, "n", {8, 8}),
       {Victim(arena, "a", 8, 0), Victim(arena, "b", 8, 1)},
       Verdict::Code::kSuccess,
       {0, 0}},
      {"no usage",
       4,
       NodeBuilder(arena).Name("n").Capacity(kGpuMem, 8).Build(),
       {Victim(arena, "a", 8, 0)},
       Verdict::Code::kError,
       {}},
  };
  std::unique_ptr<Policy> policy = MustCreate("{}");
  ASSERT_NE(policy, nullptr);
  const PreemptHook* preempter = policy->AsPreempter();
  ASSERT_NE(preempter, nullptr);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const model::PodInfo preemptor = GpuPod(arena, c.request);
    std::vector<uint8_t> needed(c.victims.size(), 1);
    RequestState state;
    const Verdict got = preempter->SelectVictims(state, preemptor, c.node, c.victims, needed);
    EXPECT_EQ(got.code, c.want_code) << got.reason;
    if (c.want_code == Verdict::Code::kSuccess) {
      EXPECT_EQ(needed, c.want_needed);
    }
    if (c.want_code == Verdict::Code::kUnschedulable) {
      EXPECT_EQ(got.reason, "no GPU has enough memory even after evicting the victims");
    }
  }
}

// The annotation `key` of `annotations`, or "" when absent.
std::string Find(const PodAnnotations& annotations, std::string_view key) {
  for (const auto& [k, v] : annotations) {
    if (k == key) {
      return v;
    }
  }
  return "";
}

TEST(GpuShareTest, ReserveAnnotatesTheBestFitDevice) {
  TestArena arena;
  std::unique_ptr<Policy> policy = MustCreate("{}");
  ASSERT_NE(policy, nullptr);
  const ReserveHook* reserver = policy->AsReserver();
  ASSERT_NE(reserver, nullptr);
  // Four devices of 8 GiB, free {6, 3, 3, 8}: 3 GiB fits best on device 1
  // (the least free that holds it; device 2 ties but comes later).
  const model::NodeInfo node = GpuNode(arena, "n", 4, 32, {2, 5, 5, 0});
  PodAnnotations out = {{"existing", "kept"}};
  const int64_t before = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  ASSERT_TRUE(reserver->Reserve(GpuPod(arena, 3), node, out).ok());
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[0], (std::pair<std::string, std::string>("existing", "kept")));
  EXPECT_EQ(out[1], (std::pair<std::string, std::string>("ALIYUN_COM_GPU_MEM_IDX", "1")));
  EXPECT_EQ(out[2], (std::pair<std::string, std::string>("ALIYUN_COM_GPU_MEM_POD", "3")));
  EXPECT_EQ(out[3], (std::pair<std::string, std::string>("ALIYUN_COM_GPU_MEM_DEV", "8")));
  EXPECT_EQ(out[4], (std::pair<std::string, std::string>("ALIYUN_COM_GPU_MEM_ASSIGNED", "false")));
  EXPECT_EQ(out[5].first, "ALIYUN_COM_GPU_MEM_ASSUME_TIME");
  const std::string& text = out[5].second;
  int64_t assumed = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), assumed);
  ASSERT_TRUE(ec == std::errc() && end == text.data() + text.size()) << text;
  EXPECT_GE(assumed, before);
  EXPECT_LT(assumed - before, int64_t{1'000'000'000});
}

TEST(GpuShareTest, ReserveRefusesAndSkips) {
  TestArena arena;
  std::unique_ptr<Policy> policy = MustCreate(R"({"indexAnnotation": "idx"})");
  ASSERT_NE(policy, nullptr);
  const ReserveHook* reserver = policy->AsReserver();

  PodAnnotations out;
  EXPECT_TRUE(reserver->Reserve(GpuPod(arena, 0), TwoByEight(arena, "n", {8, 8}), out).ok());
  EXPECT_TRUE(out.empty());

  Status refused = reserver->Reserve(GpuPod(arena, 4), TwoByEight(arena, "n7", {5, 6}), out);
  EXPECT_EQ(refused,
            FailedPreconditionError("no GPU with 4 GiB free on node n7 (largest free 3 GiB)"));
  EXPECT_TRUE(out.empty());

  refused = reserver->Reserve(GpuPod(arena, 4), GpuNode(arena, "bare", 0, 0, {}), out);
  EXPECT_EQ(refused,
            FailedPreconditionError("no GPU with 4 GiB free on node bare (largest free 0 GiB)"));

  refused = reserver->Reserve(GpuPod(arena, 4), NodeBuilder(arena).Name("n").Build(), out);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(out.empty());

  ASSERT_TRUE(reserver->Reserve(GpuPod(arena, 4), TwoByEight(arena, "n", {5, 2}), out).ok());
  EXPECT_EQ(Find(out, "idx"), "1");
}

TEST(GpuShareTest, RejectsInvalidArgs) {
  struct Case {
    std::string args;
    std::string want;
  };
  const std::vector<Case> cases = {
      {R"({"scoring": "tight"})",
       R"(profiles[0].policies[1].args.scoring: must be "binpack" or "spread")"},
      {R"({"scoring": 1})", "profiles[0].policies[1].args.scoring: must be a string"},
      {R"({"Scoring": "spread"})",
       "profiles[0].policies[1].args.Scoring: unknown field (known: scoring, memoryResource, "
       "countResource, indexAnnotation, podMemoryAnnotation, deviceMemoryAnnotation, "
       "assignedAnnotation, assumeTimeAnnotation, unhealthyNamespace, unhealthyPrefix, "
       "unhealthyKey, unit)"},
      {R"([])", "profiles[0].policies[1].args: must be an object"},
      {R"({"unit": ""})", "profiles[0].policies[1].args.unit: must not be empty"},
      {R"({"unhealthyKey": 3})", "profiles[0].policies[1].args.unhealthyKey: must be a string"},
      {R"({"unhealthyNamespace": "Not_A_Namespace"})",
       "profiles[0].policies[1].args.unhealthyNamespace: \"Not_A_Namespace\" is not a valid "
       "namespace name"},
  };
  PolicyContext context;
  context.args_path = "profiles[0].policies[1].args";
  context.handle = &NewHost();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    StatusOr<std::unique_ptr<Policy>> policy = NewGpuShare(json::parse(c.args), context);
    ASSERT_FALSE(policy.ok());
    EXPECT_EQ(policy.status(), InvalidArgumentError(c.want));
  }
  EXPECT_TRUE(NewGpuShare(json::parse(R"({"scoring": null})"), context).ok());
}

TEST(GpuShareTest, ProfilesShareOneAccountingWatchAndRoute) {
  PolicyHost host;
  PolicyContext context;
  context.args_path = "profiles[1].policies[0].args";
  context.handle = &host;
  ASSERT_TRUE(NewGpuShare(json::parse(R"({"scoring": "spread"})"), context).ok());
  ASSERT_TRUE(NewGpuShare(json::parse(R"({"unit": "GiB"})"), context).ok());  // the default
  EXPECT_EQ(host.accountings().size(), 1u);
  ASSERT_EQ(host.watches().size(), 1u);
  EXPECT_EQ(host.watches()[0].spec.group, "");
  EXPECT_EQ(host.watches()[0].spec.version, "v1");
  EXPECT_EQ(host.watches()[0].spec.resource, "configmaps");
  EXPECT_EQ(host.watches()[0].spec.namespace_name, "kube-system");
  ASSERT_EQ(host.routes().size(), 1u);
  EXPECT_EQ(host.routes()[0].path, "/gpushare/inspect");
  EXPECT_TRUE(host.has_metrics());
  ASSERT_EQ(host.cluster_requirements().size(), 1u);
  EXPECT_NE(host.cluster_requirements()[0].find("the GpuShare policy needs the Kubernetes API"),
            std::string::npos);
  // Without a cluster attached, the route answers 503 and the gauges are 0.
  std::string body;
  EXPECT_EQ(host.routes()[0].handler("", body), 503);
  std::string metrics;
  host.WriteMetrics(metrics);
  EXPECT_NE(metrics.find("schedext_gpushare_memory{state=\"total\"} 0\n"), std::string::npos)
      << metrics;
  // Other names cannot share the accounting.
  StatusOr<std::unique_ptr<Policy>> other =
      NewGpuShare(json::parse(R"({"unit": "MiB"})"), context);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find("profiles[1].policies[0].args: every profile's GpuShare"),
            std::string::npos)
      << other.status().message();
  // The names given become the watch: a policy of its own host.
  PolicyHost custom;
  context.handle = &custom;
  ASSERT_TRUE(NewGpuShare(json::parse(R"({"unhealthyNamespace": "gpu-system"})"), context).ok());
  EXPECT_EQ(custom.watches()[0].spec.namespace_name, "gpu-system");
}

// Through a configured profile, as the service runs it.
std::shared_ptr<const pipeline::Profile> MustBuildProfile(
    std::vector<std::pair<std::string, json>> policies) {
  Registry registry;
  EXPECT_TRUE(RegisterBuiltinPolicies(registry).ok());
  config::ProfileConfig config;
  config.name = "gpu";
  for (auto& [name, args] : policies) {
    config::PolicyConfig pc;
    pc.name = name;
    pc.weight = 1;
    pc.args = std::make_shared<const json>(std::move(args));
    config.policies.push_back(std::move(pc));
  }
  auto built = pipeline::Profile::Build(config, registry, "profiles[0]");
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  return built.ok() ? *built : nullptr;
}

TEST(GpuShareProfileTest, PreemptKeepsTheVictimsEveryHookNeeds) {
  TestArena arena;
  auto profile =
      MustBuildProfile({{"NodeResourcesFit", json::object()}, {"GpuShare", json::object()}});
  ASSERT_NE(profile, nullptr);
  // cpu is full (4000m of 4000m); device 0 is full (8 of 8 GiB).
  model::NodeInfo node = GpuNode(arena, "n", 1, 8, {8});
  model::NodeUsage usage = *node.usage;
  usage.pods = 3;
  usage.requested.Set("cpu", 4000);
  node.usage = arena.Keep(usage);
  // The cpu victim is the more important: NodeResourcesFit needs it all the
  // same; GpuShare needs the GPU victim, which NodeResourcesFit would reprieve.
  const std::vector<model::PodInfo> victims = {
      PodBuilder(arena).Name("cpu").Container({{"cpu", 1000}}).Build(),
      PodBuilder(arena).Name("gpu").Container({}, {{kGpuMem, 8}}).Annotation(kIndex, "0").Build(),
      PodBuilder(arena).Name("idle").Container({}).Build(),
  };
  const model::PodInfo preemptor =
      PodBuilder(arena).Name("p").Container({{"cpu", 1000}}, {{kGpuMem, 4}}).Build();
  const std::vector<pipeline::PreemptCandidate> candidates = {{&node, victims}};
  RequestState state;
  std::vector<pipeline::PreemptDecision> out;
  ASSERT_TRUE(profile->RunPreempt(preemptor, candidates, state, out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].keep);
  EXPECT_EQ(out[0].needed, (std::vector<uint8_t>{1, 1, 0}));

  // Without the GPU victim no device can make room: the node is dropped.
  const std::vector<model::PodInfo> cpu_only = {victims[0], victims[2]};
  const std::vector<pipeline::PreemptCandidate> fewer = {{&node, cpu_only}};
  ASSERT_TRUE(profile->RunPreempt(preemptor, fewer, state, out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].keep);
}

TEST(GpuShareProfileTest, FilterScoreCheckFitAndReserve) {
  TestArena arena;
  auto profile = MustBuildProfile({{"GpuShare", json::parse(R"({"scoring": "spread"})")}});
  ASSERT_NE(profile, nullptr);
  EXPECT_TRUE(profile->has_reservers());
  const std::vector<model::NodeInfo> nodes = {
      TwoByEight(arena, "a", {6, 0}),
      TwoByEight(arena, "b", {8, 7}),
      GpuNode(arena, "c", 0, 0, {}),
  };
  const std::vector<const model::NodeInfo*> pointers = test::NodePointers(nodes);
  const model::PodInfo pod = GpuPod(arena, 2);

  RequestState state;
  pipeline::FilterOutcome filtered;
  ASSERT_TRUE(profile->RunFilters(pod, pointers, state, filtered).ok());
  EXPECT_EQ(filtered.passed, (std::vector<uint32_t>{0}));
  ASSERT_EQ(filtered.failed.size(), 1u);
  EXPECT_EQ(filtered.failed[0].reason, kNoRoom);
  ASSERT_EQ(filtered.unresolvable.size(), 1u);
  EXPECT_EQ(filtered.unresolvable[0].reason, kNoSharedGpu);

  pipeline::ScoreScratch scratch;
  std::vector<int64_t> scores;
  const std::vector<const model::NodeInfo*> passed = {pointers[0]};
  ASSERT_TRUE(profile->RunScorers(pod, passed, scratch, scores).ok());
  // 100 × (10 − 2) / 16 = 50 → 5 of 10.
  EXPECT_EQ(scores, (std::vector<int64_t>{5}));

  EXPECT_EQ(profile->CheckFit(pod, nodes[0]), std::nullopt);
  EXPECT_EQ(profile->CheckFit(pod, nodes[1]),
            std::optional<std::string>(kNoRoom));

  PodAnnotations annotations;
  EXPECT_EQ(profile->Reserve(pod, nodes[1], annotations),
            std::optional<std::string>(
                "GpuShare: no GPU with 2 GiB free on node b (largest free 1 GiB)"));
  EXPECT_TRUE(annotations.empty());
  EXPECT_EQ(profile->Reserve(pod, nodes[0], annotations), std::nullopt);
  EXPECT_EQ(Find(annotations, "ALIYUN_COM_GPU_MEM_IDX"), "0");
  EXPECT_EQ(annotations.size(), 5u);
}

}  // namespace
}  // namespace schedext::policy
