#include "policy/builtin/hami_vgpu/accounting.h"

#include <utility>

namespace schedext::policy::hami {

void UseOf(const VgpuNodeState* state, std::span<const Device> devices, NodeUse& out) {
  out = NodeUse{};
  if (state == nullptr) {
    return;
  }
  for (size_t d = 0; d < devices.size() && d < out.size(); ++d) {
    for (const UuidUse& entry : state->devices) {
      if (entry.uuid == devices[d].uuid) {
        out[d] = entry.use;
        break;
      }
    }
  }
}

bool VgpuAccounting::Counts(const model::PodInfo& pod) const {
  const std::optional<std::string_view> allocated = pod.annotations.Find(kAllocatedAnnotation);
  return allocated.has_value() && !allocated->empty();
}

std::shared_ptr<const model::NodeState> VgpuAccounting::AddPod(
    std::string_view /*node*/, std::shared_ptr<const model::NodeState> state,
    const model::PodInfo& pod, int sign) const {
  const std::optional<std::string_view> allocated = pod.annotations.Find(kAllocatedAnnotation);
  if (!allocated.has_value()) {
    return state;
  }
  auto next = std::make_shared<VgpuNodeState>();
  if (state != nullptr) {
    next->devices = static_cast<const VgpuNodeState&>(*state).devices;
  }
  ForEachAllocated(*allocated, [&](const AllocatedDevice& device) {
    UuidUse* entry = nullptr;
    for (UuidUse& e : next->devices) {
      if (e.uuid == device.uuid) {
        entry = &e;
        break;
      }
    }
    if (entry == nullptr) {
      entry = &next->devices.emplace_back();
      entry->uuid = std::string(device.uuid);
    }
    entry->use.used += sign;
    entry->use.memory += sign * device.memory;
    entry->use.cores += sign * device.cores;
  });
  std::erase_if(next->devices, [](const UuidUse& e) {
    return e.use.used == 0 && e.use.memory == 0 && e.use.cores == 0;
  });
  if (next->devices.empty()) {
    return nullptr;
  }
  return next;
}

}  // namespace schedext::policy::hami
