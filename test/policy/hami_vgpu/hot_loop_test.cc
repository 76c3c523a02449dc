// HamiVgpu's per-node hooks allocate nothing and take no lock (policy.h):
// Filter and Score read the node's summary, or decode its register
// annotation, into fixed-size arrays and place the pod there. Its own executable because it replaces the
// global operator new and interposes pthread_mutex_lock, counting only on
// the thread that armed them (as test/pipeline/hot_loop_test.cc does for the
// built-in profiles).
#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policy/builtin/hami_vgpu/accounting.h"
#include "policy/builtin/hami_vgpu/hami_vgpu.h"
#include "policy/builtin/hami_vgpu/protocol.h"
#include "schedext/policy/node_summary.h"
#include "schedext/policy/policy_host.h"
#include "testing/counting_hooks.h"
#include "testing/model_builders.h"


namespace schedext::policy {
namespace {

#if !defined(SCHEDEXT_COUNTING_HOOKS)
TEST(HamiVgpuHotLoopTest, NoAllocationOrLockPerNode) {
  GTEST_SKIP() << "the sanitizer owns operator new; counted in the plain build";
}
#else
using test::NodeBuilder;
using test::PodBuilder;
using test::TestArena;

// Eight devices over two NUMA nodes, alternating the two register forms.
std::string Devices(size_t i) {
  std::string out;
  if (i % 2 == 0) {
    for (int d = 0; d < 8; ++d) {
      out += "GPU-" + std::to_string(i) + "-" + std::to_string(d) + ",10,81920,100,NVIDIA-A100," +
             std::to_string(d / 4) + "," + (d == 5 ? "false" : "true") + "," +
             std::to_string(d) + ",hami-core:";
    }
    return out;
  }
  out = "[";
  for (int d = 0; d < 8; ++d) {
    out += std::string(d > 0 ? "," : "") + R"({"id":"GPU-)" + std::to_string(i) + "-" +
           std::to_string(d) + R"(","index":)" + std::to_string(d) +
           R"(,"count":4,"devmem":24576,"devcore":100,"type":"NVIDIA-L4","numa":)" +
           std::to_string(d / 4) + R"(,"mode":"hami-core","health":true})";
  }
  return out + "]";
}

TEST(HamiVgpuHotLoopTest, NoAllocationOrLockPerNode) {
  TestArena arena;
  PolicyHost host;
  PolicyContext context;
  context.handle = &host;
  StatusOr<std::unique_ptr<Policy>> made = NewHamiVgpu(nlohmann::json::object(), context);
  ASSERT_TRUE(made.ok());
  const Policy& policy = **made;

  // 1,000 nodes: used by tenants in varying amounts, some without devices,
  // some with a stale handshake, half summarized as the cache summarizes
  // them, so that every path runs.
  hami::VgpuAccounting accounting;
  std::vector<model::NodeInfo> nodes;
  nodes.reserve(1000);
  for (size_t i = 0; i < 1000; ++i) {
    NodeBuilder builder(arena);
    builder.Name("n" + std::to_string(i)).Usage(0, {});
    if (i % 10 != 9) {
      builder.Annotation(hami::kRegisterAnnotation, Devices(i));
    }
    if (i % 10 == 8) {
      builder.Annotation(hami::kHandshakeAnnotation, "Requesting_2024-01-23 04:30:04");
    }
    model::NodeInfo node = builder.Build();
    std::shared_ptr<const model::NodeState> state;
    for (size_t t = 0; t < i % 7; ++t) {
      const std::string allocated = "GPU-" + std::to_string(i) + "-" + std::to_string(t % 8) +
                                    ",NVIDIA," + std::to_string(4000 * (t + 1)) + ",20:;";
      const model::PodInfo tenant = PodBuilder(arena)
                                        .Container({}, {{"nvidia.com/gpu", 1}})
                                        .Annotation(hami::kAllocatedAnnotation, allocated)
                                        .Build();
      state = accounting.AddPod(node.name, state, tenant, +1);
    }
    model::NodeUsage usage = *node.usage;
    usage.states.Set(0, std::move(state));
    node.usage = arena.Keep(usage);
    if (i % 2 == 0) {
      WriteNodeSummaries(host.summaries(), node);  // as the cluster cache stores it
      EXPECT_TRUE(node.has_summary());
    }
    nodes.push_back(std::move(node));
  }
  std::vector<const model::NodeInfo*> pointers;
  for (const model::NodeInfo& node : nodes) {
    pointers.push_back(&node);
  }

  const std::vector<model::PodInfo> pods = {
      PodBuilder(arena)
          .Container({}, {{"nvidia.com/gpu", 2}, {"nvidia.com/gpumem", 20000},
                          {"nvidia.com/gpucores", 30}})
          .Build(),
      PodBuilder(arena)
          .InitContainer({{"cpu", 10}})
          .Container({}, {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem-percentage", 50}})
          .Container({}, {{"nvidia.com/gpu", 4}, {"nvidia.com/gpucores", 100}})
          .Annotation(hami::kNumaBindAnnotation, "true")
          .Annotation(hami::kUseTypeAnnotation, "a100,l4")
          .Annotation(hami::kNoUseUuidAnnotation, "GPU-3-1,GPU-4-2")
          .Annotation(hami::kGpuPolicyAnnotation, "binpack")
          .Build(),
  };
  for (const model::PodInfo& pod : pods) {
    RequestState state;
    ASSERT_TRUE(policy.AsFilter()->PreFilter(state, pod).ok());
    ASSERT_TRUE(policy.AsScorer()->PreScore(state, pod, pointers).ok());
    size_t passed = 0;
    int64_t score_sum = 0;
    const testing::AllocationAndLockCounts counts = testing::CountAllocationsAndLocks([&] {
      for (const model::NodeInfo* node : pointers) {
        passed += policy.AsFilter()->Filter(state, pod, *node).ok() ? 1 : 0;
        score_sum += policy.AsScorer()->Score(state, pod, *node);
      }
    });
    EXPECT_EQ(counts.allocations, 0U);
    EXPECT_EQ(counts.locks, 0U);
    // The nodes exercise both answers.
    EXPECT_GT(passed, 0U);
    EXPECT_LT(passed, pointers.size());
    EXPECT_GT(score_sum, 0);
  }
}
#endif

}  // namespace
}  // namespace schedext::policy
