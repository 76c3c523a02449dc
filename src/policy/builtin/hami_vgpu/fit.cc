#include "policy/builtin/hami_vgpu/fit.h"

#include <algorithm>
#include <cmath>

namespace schedext::policy::hami {
namespace {

// pkg/scheduler/policy Weight.
constexpr float kWeight = 10;

bool ContainsNvidia(std::string_view type) {
  constexpr std::string_view kWord = "nvidia";
  for (size_t i = 0; i + kWord.size() <= type.size(); ++i) {
    size_t j = 0;
    while (j < kWord.size()) {
      char c = type[i + j];
      if (c >= 'A' && c <= 'Z') {
        c = static_cast<char>(c - 'A' + 'a');
      }
      if (c != kWord[j]) {
        break;
      }
      ++j;
    }
    if (j == kWord.size()) {
      return true;
    }
  }
  return false;
}

// DeviceListsScore.ComputeScore in float32, as Go computes it. A percentage
// request adds Totalmem × (percent / 100) in Go's integer arithmetic (the
// untyped 100.0 becomes an int32): the whole device at 100 %, nothing below.
float DeviceScore(const DeviceFacts& d, const DeviceUse& u, const ContainerRequest& r) {
  int64_t memory = r.memory;
  if (r.memory_percent != 0 && r.memory_percent != 101) {
    memory = d.memory * (r.memory_percent / 100);
  }
  const float use = static_cast<float>(r.nums + u.used) / static_cast<float>(d.count);
  const float core = static_cast<float>(r.cores + u.cores) / static_cast<float>(d.cores);
  const float mem = static_cast<float>(memory + u.memory) / static_cast<float>(d.memory);
  return kWeight * (use + core + mem);
}

// DeviceUsageList.Less.
bool Less(GpuPolicy policy, const DeviceFacts& a, float score_a, const DeviceFacts& b,
          float score_b) {
  if (policy == GpuPolicy::kBinpack) {
    if (a.numa == b.numa) {
      return score_a < score_b;
    }
    return a.numa > b.numa;
  }
  if (a.numa == b.numa) {
    return score_a > score_b;
  }
  return a.numa < b.numa;
}

}  // namespace

std::string_view Reason(Misfit misfit) {
  switch (misfit) {
    case Misfit::kNone:
      return "";
    case Misfit::kTooFewDevices:
    case Misfit::kSplitsExhausted:
      return "Insufficient nvidia.com/gpu";
    case Misfit::kUnhealthy:
      return "node(s) have no healthy GPU for the request";
    case Misfit::kTypeMismatch:
      return "node(s) have no GPU of the requested type or mode";
    case Misfit::kUuidMismatch:
      return "node(s) have no GPU of the requested UUIDs";
    case Misfit::kNuma:
      return "node(s) cannot place the GPUs on one NUMA node";
    case Misfit::kMemory:
      return "Insufficient nvidia.com/gpumem";
    case Misfit::kCores:
      return "Insufficient nvidia.com/gpucores";
    case Misfit::kExclusive:
      return "node(s) have no GPU free for exclusive use";
  }
  return "";
}

bool Unresolvable(Misfit misfit) {
  return misfit == Misfit::kTooFewDevices || misfit == Misfit::kUnhealthy ||
         misfit == Misfit::kTypeMismatch || misfit == Misfit::kUuidMismatch;
}

bool PodRequest::AsksForVgpus() const {
  const auto asks = [](const ContainerRequest& r) { return r.nums > 0; };
  return std::any_of(init.begin(), init.end(), asks) || std::any_of(app.begin(), app.end(), asks);
}

PodRequest RequestOf(const model::PodInfo& pod, const ResourceNames& names) {
  PodRequest out;
  for (const model::ContainerResources& c : pod.init_containers) {
    out.init.push_back(RequestOf(c, names));
  }
  for (const model::ContainerResources& c : pod.containers) {
    out.app.push_back(RequestOf(c, names));
  }
  return out;
}

int64_t MemoryPerVgpu(const ContainerRequest& request, int64_t device_memory) {
  if (request.memory > 0) {
    return request.memory;
  }
  // 101 is "no percentage given". int32 arithmetic in Go; devices' memory
  // is int32 and percent <= 100 in practice, so the product stays in range.
  return request.memory == 0 && request.memory_percent != 101
             ? device_memory * request.memory_percent / 100
             : 0;
}

void FactsOf(std::span<const Device> devices, const NodeUse& use, const PodRules& rules,
             NodeFacts& out) {
  out.size = 0;
  for (size_t i = 0; i < devices.size() && i < static_cast<size_t>(kMaxDevices); ++i) {
    const Device& d = devices[i];
    if (!ContainsNvidia(d.type)) {
      continue;
    }
    const size_t at = static_cast<size_t>(out.size++);
    // MIG placement is not implemented: a MIG-mode device never fits.
    out.devices[at] = DeviceFacts{d.count,   d.memory,
                                  d.cores,   d.numa,
                                  d.healthy, TypeAllowed(rules, d) && d.mode != "mig",
                                  UuidAllowed(rules, d), static_cast<uint8_t>(i)};
    out.use[at] = use[i];
  }
}

Misfit FitContainer(const NodeFacts& node, NodeUse& use, std::array<int, kMaxDevices>& order,
                    const ContainerRequest& request, bool numa_bind, GpuPolicy gpu_policy,
                    bool sort, std::array<Choice, kMaxDevices>& chosen) {
  const int visible = node.size;
  if (request.nums > visible) {
    return Misfit::kTooFewDevices;
  }
  const std::array<DeviceFacts, kMaxDevices>& devices = node.devices;
  // The order HAMi's sort.Sort leaves: Go sorts up to 12 elements by
  // insertion sort (stable), starting from the previous container's order.
  std::array<float, kMaxDevices> score;
  for (int i = 0; sort && i < visible; ++i) {
    const size_t d = static_cast<size_t>(order[static_cast<size_t>(i)]);
    score[d] = DeviceScore(devices[d], use[d], request);
  }
  for (int i = 1; sort && i < visible; ++i) {
    for (int j = i; j > 0; --j) {
      const size_t a = static_cast<size_t>(order[static_cast<size_t>(j)]);
      const size_t b = static_cast<size_t>(order[static_cast<size_t>(j - 1)]);
      if (!Less(gpu_policy, devices[a], score[a], devices[b], score[b])) {
        break;
      }
      std::swap(order[static_cast<size_t>(j)], order[static_cast<size_t>(j - 1)]);
    }
  }

  // Fit: the devices from the end of the sorted list.
  MisfitCounts counts{};
  const auto count = [&](Misfit m, int n = 1) { counts[static_cast<size_t>(m)] += n; };
  int64_t nums = request.nums;
  int taken = 0;
  int64_t prev_numa = -1;
  const int64_t cores = std::min<int64_t>(request.cores, 100);
  for (int i = visible - 1; i >= 0; --i) {
    const size_t d = static_cast<size_t>(order[static_cast<size_t>(i)]);
    const DeviceFacts& dev = devices[d];
    const DeviceUse& u = use[d];
    if (!dev.healthy) {
      count(Misfit::kUnhealthy);
      continue;
    }
    if (!dev.type_allowed) {
      count(Misfit::kTypeMismatch);
      continue;
    }
    if (numa_bind && prev_numa != dev.numa) {
      if (nums != request.nums) {
        count(Misfit::kNuma, taken > 0 ? 1 : 0);
      }
      nums = request.nums;
      prev_numa = dev.numa;
      taken = 0;
    }
    if (!dev.uuid_allowed) {
      count(Misfit::kUuidMismatch);
      continue;
    }
    if (dev.count <= u.used) {
      count(Misfit::kSplitsExhausted);
      continue;
    }
    const int64_t memory = MemoryPerVgpu(request, dev.memory);
    if (dev.memory - u.memory < memory) {
      count(Misfit::kMemory);
      continue;
    }
    if (dev.cores - u.cores < cores) {
      count(Misfit::kCores);
      continue;
    }
    if (dev.cores == 100 && cores == 100 && u.used > 0) {
      count(Misfit::kExclusive);
      continue;
    }
    if (dev.cores != 0 && u.cores == dev.cores && cores == 0) {
      count(Misfit::kCores);
      continue;
    }
    if (nums > 0) {
      --nums;
      chosen[static_cast<size_t>(taken++)] = Choice{0, static_cast<int>(d), memory, cores};
    }
    if (nums == 0) {
      for (int k = 0; k < taken; ++k) {
        DeviceUse& target = use[static_cast<size_t>(chosen[static_cast<size_t>(k)].device)];
        ++target.used;
        target.memory += chosen[static_cast<size_t>(k)].memory;
        target.cores += chosen[static_cast<size_t>(k)].cores;
      }
      return Misfit::kNone;
    }
  }
  return MostFrequent(counts, taken > 0);
}

Misfit MostFrequent(const MisfitCounts& counts, bool some_passed) {
  // Ties go to the first in this order.
  constexpr Misfit kOrder[] = {Misfit::kMemory,      Misfit::kCores,        Misfit::kExclusive,
                               Misfit::kSplitsExhausted, Misfit::kNuma,   Misfit::kUuidMismatch,
                               Misfit::kTypeMismatch, Misfit::kUnhealthy};
  Misfit best = Misfit::kSplitsExhausted;
  int best_count = 0;
  for (const Misfit m : kOrder) {
    if (counts[static_cast<size_t>(m)] > best_count) {
      best = m;
      best_count = counts[static_cast<size_t>(m)];
    }
  }
  if (best_count == 0 && some_passed) {
    return Misfit::kTooFewDevices;
  }
  return best;
}

int64_t ScoreOfTotals(const NodeTotals& t, NodePolicy policy) {
  const auto ratio = [](int64_t a, int64_t b) {
    return b > 0 ? static_cast<float>(a) / static_cast<float>(b) : 0.0F;
  };
  const float raw = kWeight * (ratio(t.used, t.count) + ratio(t.used_cores, t.cores) +
                               ratio(t.used_memory, t.memory));
  // raw is in [0, 30] for a node within its capacity.
  int64_t score = std::lround(std::clamp(raw, 0.0F, 3 * kWeight) * 100.0F / (3 * kWeight));
  return policy == NodePolicy::kBinpack ? score : 100 - score;
}

namespace {

NodeTotals TotalsOf(const NodeFacts& node, const NodeUse& use) {
  NodeTotals t;
  for (size_t d = 0; d < static_cast<size_t>(node.size); ++d) {
    t.used += use[d].used;
    t.used_cores += use[d].cores;
    t.used_memory += use[d].memory;
    t.count += node.devices[d].count;
    t.cores += node.devices[d].cores;
    t.memory += node.devices[d].memory;
  }
  return t;
}

}  // namespace

int64_t NodeScore(const NodeFacts& node, const NodeUse& after, NodePolicy policy) {
  return ScoreOfTotals(TotalsOf(node, after), policy);
}

std::optional<int64_t> ScorePod(const NodeFacts& node, const PodRequest& pod, bool numa_bind,
                                GpuPolicy gpu_policy, NodePolicy node_policy) {
  const auto asks = [](const ContainerRequest& r) { return r.nums > 0; };
  bool totals_fixed = std::none_of(pod.init.begin(), pod.init.end(), asks);
  const auto same_memory = [&] {
    for (int d = 1; d < node.size; ++d) {
      if (node.devices[static_cast<size_t>(d)].memory != node.devices[0].memory) {
        return false;
      }
    }
    return true;
  };
  for (size_t c = 0; totals_fixed && c < pod.app.size(); ++c) {
    const ContainerRequest& r = pod.app[c];
    if (r.nums > 0 && MemoryDependsOnDevice(r)) {
      totals_fixed = same_memory();
      break;
    }
  }
  if (!totals_fixed) {
    const FitResult fit = FitPod(node, pod, numa_bind, gpu_policy, FitFor::kPlacement,
                                 [](const Choice&) {});
    if (fit.misfit != Misfit::kNone) {
      return std::nullopt;
    }
    return NodeScore(node, fit.after, node_policy);
  }
  if (FitPod(node, pod, numa_bind, gpu_policy, FitFor::kVerdict, [](const Choice&) {}).misfit !=
      Misfit::kNone) {
    return std::nullopt;
  }
  // Each chosen device gains one vGPU, the container's cores (at most 100,
  // as FitContainer counts them) and its memory per vGPU.
  NodeTotals t = TotalsOf(node, node.use);
  const int64_t device_memory = node.size > 0 ? node.devices[0].memory : 0;
  for (const ContainerRequest& r : pod.app) {
    if (r.nums > 0) {
      t.used += r.nums;
      t.used_cores += r.nums * std::min<int64_t>(r.cores, 100);
      t.used_memory += r.nums * MemoryPerVgpu(r, device_memory);
    }
  }
  return ScoreOfTotals(t, node_policy);
}

}  // namespace schedext::policy::hami
