#include "policy/builtin/hami_vgpu/summary.h"

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
  VgpuSummary summary;
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
    if (!Fits<int32_t>(f.memory) || !Fits<int32_t>(u.memory) || !Fits<int16_t>(f.cores) ||
        !Fits<int16_t>(u.cores) || !Fits<uint8_t>(f.count) || !Fits<uint8_t>(u.used) ||
        !Fits<int8_t>(f.numa)) {
      return VgpuSummary{};
    }
    summary.devices[d] = VgpuSummaryDevice{
        static_cast<int32_t>(f.memory), static_cast<int32_t>(u.memory),
        static_cast<int16_t>(f.cores),  static_cast<int16_t>(u.cores),
        static_cast<uint8_t>(f.count),  static_cast<uint8_t>(u.used),
        static_cast<int8_t>(f.numa),
        static_cast<uint8_t>((f.healthy ? kHealthyFlag : 0) | (f.type_allowed ? 0 : kMigFlag))};
  }
  summary.size = static_cast<uint8_t>(facts.size);
  summary.registered = true;
  summary.usable = true;
  return summary;
}

void FactsOf(const VgpuSummary& summary, NodeFacts& out) {
  out.size = summary.size;
  for (size_t d = 0; d < summary.size; ++d) {
    const VgpuSummaryDevice& s = summary.devices[d];
    // The index is only read at bind, which decodes the node.
    out.devices[d] = DeviceFacts{s.count,
                                 s.memory,
                                 s.cores,
                                 s.numa,
                                 (s.flags & kHealthyFlag) != 0,
                                 (s.flags & kMigFlag) == 0,
                                 true,
                                 static_cast<uint8_t>(d)};
    out.use[d] = DeviceUse{s.used, s.used_memory, s.used_cores};
  }
}

}  // namespace schedext::policy::hami
