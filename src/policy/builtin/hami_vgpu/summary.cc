#include "policy/builtin/hami_vgpu/summary.h"

#include <algorithm>
#include <optional>

#include "policy/builtin/hami_vgpu/accounting.h"

namespace schedext::policy::hami {
namespace {

template <typename T>
bool Fits(int64_t value) {
  return value >= std::numeric_limits<T>::min() && value <= std::numeric_limits<T>::max();
}

}  // namespace

VgpuSummary Summarize(const model::NodeInfo& node, NodeStateSlot slot,
                      std::string_view count_resource) {
  VgpuSummary summary{};
  NodeDevices devices;
  const std::optional<std::string_view> text = node.annotations.Find(kRegisterAnnotation);
  if (!text.has_value() || !DecodeRegister(*text, devices) || devices.size == 0) {
    summary.usable = true;  // registers no device
    return summary;
  }
  const std::optional<std::string_view> handshake = node.annotations.Find(kHandshakeAnnotation);
  if (handshake.has_value() && node.allocatable.Get(count_resource) <= 0) {
    summary.stale_from = HandshakeStaleFrom(*handshake);
  }
  NodeUse use;
  const model::NodeState* state = node.usage != nullptr ? node.usage->states.Get(slot) : nullptr;
  UseOf(static_cast<const VgpuNodeState*>(state), devices.view(), use);
  NodeFacts facts;
  FactsOf(devices.view(), use, PodRules{}, facts);
  if (facts.size > kSummaryDevices) {
    return VgpuSummary{};
  }
  for (size_t d = 0; d < static_cast<size_t>(facts.size); ++d) {
    const DeviceFacts& f = facts.devices[d];
    const DeviceUse& u = facts.use[d];
    if (!Fits<int32_t>(f.memory) || !Fits<int32_t>(u.memory) || !Fits<uint8_t>(f.cores) ||
        !Fits<uint8_t>(u.cores) || !Fits<uint8_t>(f.count) || !Fits<uint8_t>(u.used) ||
        !Fits<int8_t>(f.numa)) {
      return VgpuSummary{};
    }
    summary.memory[d] = static_cast<int32_t>(f.memory);
    summary.used_memory[d] = static_cast<int32_t>(u.memory);
    summary.cores[d] = static_cast<uint8_t>(f.cores);
    summary.used_cores[d] = static_cast<uint8_t>(u.cores);
    summary.count[d] = static_cast<uint8_t>(f.count);
    summary.used[d] = static_cast<uint8_t>(u.used);
    summary.numa[d] = static_cast<int8_t>(f.numa);
    summary.healthy |= static_cast<uint8_t>(f.healthy ? 1U << d : 0U);
    // With no rules, only MIG mode makes a device's type disallowed.
    summary.mig |= static_cast<uint8_t>(f.type_allowed ? 0U : 1U << d);
  }
  summary.size = static_cast<uint8_t>(facts.size);
  summary.registered = true;
  summary.usable = true;
  return summary;
}

void FactsOf(const VgpuSummary& summary, NodeFacts& out) {
  out.size = summary.size;
  for (size_t d = 0; d < summary.size; ++d) {
    // The index is only read at bind, which decodes the node.
    out.devices[d] = DeviceFacts{summary.count[d],
                                 summary.memory[d],
                                 summary.cores[d],
                                 summary.numa[d],
                                 ((summary.healthy >> d) & 1U) != 0,
                                 ((summary.mig >> d) & 1U) == 0,
                                 true,
                                 static_cast<uint8_t>(d)};
    out.use[d] = DeviceUse{summary.used[d], summary.used_memory[d], summary.used_cores[d]};
  }
}

namespace {

// FitContainer's checks of one device, in its order, for a request of
// `cores` (at most 100) per vGPU.
inline Misfit DeviceMisfit(const VgpuSummary& summary, size_t d, const ContainerRequest& request,
                           int64_t cores) {
  const int64_t free_cores = int64_t{summary.cores[d]} - summary.used_cores[d];
  if (((summary.healthy >> d) & 1U) == 0) return Misfit::kUnhealthy;
  if (((summary.mig >> d) & 1U) != 0) return Misfit::kTypeMismatch;
  if (summary.count[d] <= summary.used[d]) return Misfit::kSplitsExhausted;
  if (int64_t{summary.memory[d]} - summary.used_memory[d] <
      MemoryPerVgpu(request, summary.memory[d])) {
    return Misfit::kMemory;
  }
  if (free_cores < cores) return Misfit::kCores;
  if (summary.cores[d] == 100 && cores == 100 && summary.used[d] > 0) return Misfit::kExclusive;
  if (summary.cores[d] != 0 && free_cores == 0 && cores == 0) return Misfit::kCores;
  return Misfit::kNone;
}

}  // namespace

Misfit FitOne(const VgpuSummary& summary, const ContainerRequest& request) {
  if (request.nums > summary.size) {
    return Misfit::kTooFewDevices;
  }
  const int64_t cores = std::min<int64_t>(request.cores, 100);
  MisfitCounts counts{};
  int64_t passing = 0;
  for (size_t d = 0; d < summary.size; ++d) {
    const Misfit m = DeviceMisfit(summary, d, request, cores);
    if (m != Misfit::kNone) {
      ++counts[static_cast<size_t>(m)];
    } else if (++passing >= request.nums) {
      return Misfit::kNone;
    }
  }
  return MostFrequent(counts, passing > 0);
}

std::optional<int64_t> ScoreOne(const VgpuSummary& summary, const ContainerRequest& request,
                                NodePolicy policy, bool& placement_needed) {
  placement_needed = false;
  const bool by_device = MemoryDependsOnDevice(request);
  for (size_t d = 1; by_device && d < summary.size; ++d) {
    if (summary.memory[d] != summary.memory[0]) {
      placement_needed = true;
      return std::nullopt;
    }
  }
  if (FitOne(summary, request) != Misfit::kNone) {
    return std::nullopt;
  }
  // Each chosen device gains one vGPU, the cores (at most 100, as
  // FitContainer counts them) and the memory of one vGPU. (A separate pass:
  // the fit above stops at the first devices that pass.)
  NodeTotals t;
  t.used = request.nums;
  t.used_cores = request.nums * std::min<int64_t>(request.cores, 100);
  t.used_memory = request.nums * MemoryPerVgpu(request, summary.memory[0]);
  for (size_t d = 0; d < summary.size; ++d) {
    t.used += summary.used[d];
    t.used_cores += summary.used_cores[d];
    t.used_memory += summary.used_memory[d];
    t.count += summary.count[d];
    t.cores += summary.cores[d];
    t.memory += summary.memory[d];
  }
  return ScoreOfTotals(t, policy);
}

}  // namespace schedext::policy::hami
