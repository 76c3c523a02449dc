// schedext-machine-probe: is this machine steady enough to benchmark on?
// (issue 15, part 3: the slow phases.)
//
// Two probes, each repeated in short samples so that a phase change shows:
//   alu    a dependent multiply-add chain, no memory: the core's speed
//          (frequency, a neighbour on the same physical core);
//   chase  a dependent random walk over a buffer of --mb MiB, one load per
//          cache line visited: the latency of whatever level the buffer
//          lives in (L2 2 MiB and L3 32 MiB on the EPYC guests we run on),
//          TLB misses and the host's backing of the guest's pages included.
// A steady machine prints the same number in every sample of a probe. The
// schedext request path is the chase kind (thousands of scattered node
// entries), so a machine whose chase samples jump between levels for seconds
// at a time gives request costs that jump the same way (docs/benchmarks.md).
//
//   schedext-machine-probe [--samples 40] [--mb 4,64]
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

double CpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// ns per step of a dependent multiply-add chain.
double AluSample(uint64_t seed) {
  constexpr long kSteps = 20'000'000;
  uint64_t x = seed | 1;
  const double t0 = CpuNs();
  for (long i = 0; i < kSteps; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  }
  // The chain's result is consumed before the clock is read again, so it can
  // be neither dropped nor moved past it.
  asm volatile("" : : "r"(x) : "memory");
  return (CpuNs() - t0) / kSteps;
}

// One cache line per slot; next[] forms a single random cycle over all slots.
struct Walk {
  explicit Walk(size_t mib) : slots(mib * 1024 * 1024 / 64), next(slots * 8) {
    std::vector<size_t> order(slots);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(1));
    for (size_t i = 0; i < slots; ++i) {
      next[order[i] * 8] = order[(i + 1) % slots] * 8;
    }
  }
  // ns per dependent load.
  double Sample() {
    constexpr long kLoads = 2'000'000;
    const double t0 = CpuNs();
    size_t p = at;
    for (long i = 0; i < kLoads; ++i) {
      p = next[p];
    }
    // The walk's last slot is consumed before the clock is read again, so
    // the loads cannot be moved past it.
    asm volatile("" : : "r"(p) : "memory");
    at = p;
    return (CpuNs() - t0) / kLoads;
  }
  size_t slots;
  std::vector<size_t> next;
  size_t at = 0;
};

void Print(const char* what, const std::vector<double>& samples) {
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  std::printf("%-12s min %7.2f  median %7.2f  max %7.2f  max/min %5.2fx  samples:", what,
              sorted.front(), sorted[sorted.size() / 2], sorted.back(),
              sorted.back() / sorted.front());
  for (double s : samples) std::printf(" %.1f", s);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 40;
  std::vector<size_t> sizes = {4, 64};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--samples") {
      samples = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "--mb") {
      sizes.clear();
      for (std::string_view list = argv[i + 1]; !list.empty();) {
        const size_t comma = list.find(',');
        sizes.push_back(std::max<size_t>(1, std::stoul(std::string(list.substr(0, comma)))));
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
      }
    } else {
      std::fprintf(stderr, "usage: schedext-machine-probe [--samples N] [--mb 4,64]\n");
      return 2;
    }
  }
  std::vector<double> alu;
  for (int s = 0; s < samples; ++s) alu.push_back(AluSample(static_cast<uint64_t>(s)));
  Print("alu ns/step", alu);
  for (size_t mib : sizes) {
    Walk walk(mib);
    walk.Sample();  // the first pass brings the buffer in wherever it fits
    std::vector<double> chase;
    for (int s = 0; s < samples; ++s) chase.push_back(walk.Sample());
    const std::string label = "chase " + std::to_string(mib) + "M";
    Print(label.c_str(), chase);
  }
  return 0;
}
