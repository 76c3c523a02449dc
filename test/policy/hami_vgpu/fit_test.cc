#include "policy/builtin/hami_vgpu/fit.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace schedext::policy::hami {
namespace {

// Filter's kVerdict skips HAMi's device sort where the choice cannot change
// the answer (fit.h): on random nodes and pods it must give the misfit the
// full placement gives, both policies, with and without NUMA binding.
TEST(HamiFitTest, VerdictOnlyFitAnswersAsThePlacement) {
  std::mt19937 rng(99);
  const auto pick = [&](int bound) { return static_cast<int>(rng() % static_cast<unsigned>(bound)); };
  size_t fits = 0, cases = 0, multi = 0;
  for (int n = 0; n < 3000; ++n) {
    NodeFacts node;
    node.size = pick(kMaxDevices + 1);
    for (size_t d = 0; d < static_cast<size_t>(node.size); ++d) {
      node.devices[d] = DeviceFacts{1 + pick(6),         1024 * (1 + pick(32)), pick(3) == 0 ? 50 : 100,
                                    pick(2),             pick(8) != 0,          pick(10) != 0,
                                    pick(10) != 0,       static_cast<uint8_t>(d)};
      const int64_t used = pick(static_cast<int>(node.devices[d].count) + 1);
      node.use[d] = DeviceUse{used, used * 1024 * pick(4), used * 10 * pick(3)};
    }
    PodRequest pod;
    const auto request = [&]() {
      ContainerRequest r;
      r.nums = pick(4);
      if (pick(3) == 0) {
        r.memory_percent = 10 * (1 + pick(10));
      } else {
        r.memory = 1024 * (1 + pick(16));
      }
      r.cores = pick(4) == 0 ? 100 : 10 * pick(5);
      return r;
    };
    for (int c = pick(3); c > 0; --c) pod.init.push_back(request());
    for (int c = 1 + pick(3); c > 0; --c) pod.app.push_back(request());
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

}  // namespace
}  // namespace schedext::policy::hami
