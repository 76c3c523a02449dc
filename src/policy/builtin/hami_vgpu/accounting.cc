#include "policy/builtin/hami_vgpu/accounting.h"

#include <nlohmann/json.hpp>
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

std::string VgpuAccounting::EncodeState(const model::NodeState& state) const {
  nlohmann::json devices = nlohmann::json::array();
  for (const UuidUse& d : static_cast<const VgpuNodeState&>(state).devices) {
    devices.push_back({{"uuid", d.uuid},
                       {"used", d.use.used},
                       {"memory", d.use.memory},
                       {"cores", d.use.cores}});
  }
  return nlohmann::json{{"devices", std::move(devices)}}.dump();
}

StatusOr<std::shared_ptr<const model::NodeState>> VgpuAccounting::DecodeState(
    std::string_view json) const {
  const auto invalid = [](std::string_view what) {
    return InvalidArgumentError("HamiVgpu state: " + std::string(what));
  };
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, false);
  if (!doc.is_object() || !doc.contains("devices") || !doc["devices"].is_array()) {
    return invalid("expected {\"devices\": [...]}");
  }
  const nlohmann::json& list = doc["devices"];
  if (list.size() > kMaxRecordedDevices) {
    return invalid("more than " + std::to_string(kMaxRecordedDevices) + " devices");
  }
  auto next = std::make_shared<VgpuNodeState>();
  for (const nlohmann::json& d : list) {
    const auto integer = [&](const char* key) {
      return d.contains(key) && d[key].is_number_integer();
    };
    if (!d.is_object() || !d.contains("uuid") || !d["uuid"].is_string() || !integer("used") ||
        !integer("memory") || !integer("cores")) {
      return invalid("each device needs uuid (a string), used, memory and cores (integers)");
    }
    const std::string& uuid = d["uuid"].get_ref<const std::string&>();
    if (uuid.empty() || uuid.size() > kMaxRecordedUuid) {
      return invalid("a device's uuid is empty or longer than " +
                     std::to_string(kMaxRecordedUuid) + " bytes");
    }
    for (const UuidUse& seen : next->devices) {
      if (seen.uuid == uuid) {
        return invalid("device " + uuid + " is listed twice");
      }
    }
    UuidUse entry{uuid, DeviceUse{d["used"].get<int64_t>(), d["memory"].get<int64_t>(),
                                  d["cores"].get<int64_t>()}};
    if (entry.use.used != 0 || entry.use.memory != 0 || entry.use.cores != 0) {
      next->devices.push_back(std::move(entry));
    }
  }
  if (next->devices.empty()) {
    return std::shared_ptr<const model::NodeState>();
  }
  return std::shared_ptr<const model::NodeState>(std::move(next));
}

}  // namespace schedext::policy::hami
