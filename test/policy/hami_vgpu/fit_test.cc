#include "policy/builtin/hami_vgpu/fit.h"
#include "policy/builtin/hami_vgpu/summary.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace schedext::policy::hami {
namespace {

// Random cases for the equivalence tests below.
class RandomCases {
 public:
  explicit RandomCases(unsigned seed) : rng_(seed) {}

  int Pick(int bound) { return static_cast<int>(rng_() % static_cast<unsigned>(bound)); }

  // Up to kMaxDevices devices: split counts, sizes (all of `one_size` MiB
  // when it is not 0), half-size cores, NUMA nodes, health, type and UUID
  // rules, and usage on them.
  NodeFacts Node(int64_t one_size) {
    NodeFacts node;
    node.size = Pick(kMaxDevices + 1);
    for (size_t d = 0; d < static_cast<size_t>(node.size); ++d) {
      node.devices[d] = DeviceFacts{1 + Pick(6),
                                    one_size != 0 ? one_size : 1024 * (1 + Pick(32)),
                                    Pick(3) == 0 ? 50 : 100,
                                    Pick(2),
                                    Pick(8) != 0,
                                    Pick(10) != 0,
                                    Pick(10) != 0,
                                    static_cast<uint8_t>(d)};
      const int64_t used = Pick(static_cast<int>(node.devices[d].count) + 1);
      node.use[d] = DeviceUse{used, used * 1024 * Pick(4), used * 10 * Pick(3)};
    }
    return node;
  }

  // 0-3 vGPUs of an amount of memory, a percentage or none, and cores up
  // to 150 (more than 100 counts as 100).
  ContainerRequest Request() {
    ContainerRequest r;
    r.nums = Pick(4);
    const int kind = Pick(4);
    if (kind == 0) {
      r.memory_percent = 10 * (1 + Pick(10));
    } else if (kind == 1) {
      r.memory_percent = 101;  // no memory asked
    } else {
      r.memory = 1024 * (1 + Pick(16));
    }
    r.cores = Pick(4) == 0 ? 100 + Pick(50) : 10 * Pick(5);
    return r;
  }

 private:
  std::mt19937 rng_;
};

// Filter's kVerdict skips HAMi's device sort where the choice cannot change
// the answer (fit.h): on random nodes and pods it must give the misfit the
// full placement gives, both policies, with and without NUMA binding.
TEST(HamiFitTest, VerdictOnlyFitAnswersAsThePlacement) {
  RandomCases random(99);
  size_t fits = 0, cases = 0, multi = 0;
  for (int n = 0; n < 3000; ++n) {
    const NodeFacts node = random.Node(0);
    PodRequest pod;
    for (int c = random.Pick(3); c > 0; --c) pod.init.push_back(random.Request());
    for (int c = 1 + random.Pick(3); c > 0; --c) pod.app.push_back(random.Request());
    multi += pod.app.size() > 1 ? 1 : 0;
    for (const bool numa_bind : {false, true}) {
      for (const GpuPolicy policy : {GpuPolicy::kBinpack, GpuPolicy::kSpread}) {
        SCOPED_TRACE("case " + std::to_string(n));
        const Misfit placed =
            FitPod(node, pod, numa_bind, policy, FitFor::kPlacement, [](const Choice&) {}).misfit;
        const Misfit verdict =
            FitPod(node, pod, numa_bind, policy, FitFor::kVerdict, [](const Choice&) {}).misfit;
        EXPECT_EQ(static_cast<int>(verdict), static_cast<int>(placed));
        fits += placed == Misfit::kNone ? 1 : 0;
        ++cases;
      }
    }
  }
  EXPECT_GT(fits, cases / 5);
  EXPECT_LT(fits, cases * 4 / 5);
  EXPECT_GT(multi, 1000u);
}

// ScorePod answers from the verdict and the totals where the chosen devices
// cannot change them: on random nodes and pods (init containers, percentage
// requests, devices of mixed and of equal sizes) it must give the score of
// the full placement, and no score exactly where the placement does not fit.
TEST(HamiFitTest, ScoreWithoutPlacementAnswersAsThePlacement) {
  RandomCases random(7);
  size_t scored = 0, cases = 0, equal_sizes = 0;
  for (int n = 0; n < 3000; ++n) {
    const bool one_size = random.Pick(2) == 0;
    equal_sizes += one_size ? 1 : 0;
    const NodeFacts node = random.Node(one_size ? 40960 : 0);
    PodRequest pod;
    if (random.Pick(4) == 0) {
      for (int c = 1 + random.Pick(2); c > 0; --c) pod.init.push_back(random.Request());
    }
    for (int c = 1 + random.Pick(3); c > 0; --c) pod.app.push_back(random.Request());
    for (const bool numa_bind : {false, true}) {
      for (const GpuPolicy gpu : {GpuPolicy::kBinpack, GpuPolicy::kSpread}) {
        for (const NodePolicy policy : {NodePolicy::kBinpack, NodePolicy::kSpread}) {
          SCOPED_TRACE("case " + std::to_string(n));
          const FitResult placed =
              FitPod(node, pod, numa_bind, gpu, FitFor::kPlacement, [](const Choice&) {});
          const std::optional<int64_t> score = ScorePod(node, pod, numa_bind, gpu, policy);
          ASSERT_EQ(score.has_value(), placed.misfit == Misfit::kNone);
          if (score.has_value()) {
            EXPECT_EQ(*score, NodeScore(node, placed.after, policy));
            ++scored;
          }
          ++cases;
        }
      }
    }
  }
  EXPECT_GT(scored, cases / 5);
  EXPECT_LT(scored, cases * 4 / 5);
  EXPECT_GT(equal_sizes, 1000u);
}

// FitOne and ScoreOne decide the common pod on the summary itself: on random
// summaries (health, MIG, used-up splits, memory and cores, one or mixed
// device sizes) and single-container requests they must answer what FitPod
// and ScorePod answer on the facts the summary makes.
TEST(HamiSummaryTest, OneContainerOnTheSummaryAnswersAsTheFacts) {
  RandomCases random(11);
  const auto pick = [&](int bound) { return random.Pick(bound); };
  size_t fits = 0, cases = 0, placed_instead = 0;
  std::array<size_t, 10> misfits{};
  for (int n = 0; n < 20000; ++n) {
    VgpuSummary summary{};
    summary.size = static_cast<uint8_t>(pick(kSummaryDevices + 1));
    const bool one_size = pick(2) == 0;
    for (size_t d = 0; d < summary.size; ++d) {
      summary.count[d] = static_cast<uint8_t>(1 + pick(10));
      summary.used[d] = static_cast<uint8_t>(pick(summary.count[d] + 1));
      summary.memory[d] = one_size ? 81920 : 1024 * (1 + pick(80));
      summary.used_memory[d] = summary.used[d] == 0 ? 0 : pick(summary.memory[d] + 1);
      summary.cores[d] = static_cast<uint8_t>(pick(4) == 0 ? 50 : 100);
      // Pods asking for memory only leave cores unused.
      summary.used_cores[d] = static_cast<uint8_t>(
          summary.used[d] == 0 || pick(3) == 0 ? 0 : pick(summary.cores[d] + 1));
      summary.numa[d] = static_cast<int8_t>(d / 4);
      summary.healthy |= static_cast<uint8_t>(pick(10) != 0 ? 1U << d : 0U);
      summary.mig |= static_cast<uint8_t>(pick(20) == 0 ? 1U << d : 0U);
    }
    summary.registered = summary.usable = true;
    ContainerRequest r = random.Request();
    r.nums = 1 + pick(3);
    PodRequest pod;
    if (pick(2) == 0) pod.app.push_back(ContainerRequest{});  // a sidecar asking for none
    pod.app.push_back(r);
    NodeFacts facts;
    FactsOf(summary, facts);
    SCOPED_TRACE("case " + std::to_string(n));
    const Misfit want =
        FitPod(facts, pod, false, GpuPolicy::kSpread, FitFor::kPlacement, [](const Choice&) {})
            .misfit;
    ASSERT_EQ(static_cast<int>(FitOne(summary, r)), static_cast<int>(want));
    ++misfits[static_cast<size_t>(want)];
    for (const NodePolicy policy : {NodePolicy::kBinpack, NodePolicy::kSpread}) {
      bool placement_needed = true;
      const std::optional<int64_t> score = ScoreOne(summary, r, policy, placement_needed);
      if (placement_needed) {
        ++placed_instead;
        continue;
      }
      EXPECT_EQ(score, ScorePod(facts, pod, false, GpuPolicy::kSpread, policy));
      fits += score.has_value() ? 1 : 0;
      ++cases;
    }
  }
  EXPECT_GT(fits, cases / 5);
  EXPECT_LT(fits, cases * 4 / 5);
  EXPECT_GT(placed_instead, 500u);
  for (const Misfit m : {Misfit::kTooFewDevices, Misfit::kUnhealthy, Misfit::kTypeMismatch,
                         Misfit::kSplitsExhausted, Misfit::kMemory, Misfit::kCores,
                         Misfit::kExclusive}) {
    EXPECT_GT(misfits[static_cast<size_t>(m)], 20u) << "misfit " << static_cast<int>(m);
  }
}

}  // namespace
}  // namespace schedext::policy::hami
