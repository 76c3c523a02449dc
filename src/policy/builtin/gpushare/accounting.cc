#include "policy/builtin/gpushare/accounting.h"

#include <spdlog/spdlog.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace schedext::policy::gpushare {
namespace {

// "0,2" for the devices of `mask`, "none" for an empty one (log text).
std::string DeviceList(uint64_t mask) {
  std::string out;
  for (int device = 0; device < kMaxGpuDevices; ++device) {
    if (((mask >> device) & 1U) != 0) {
      if (!out.empty()) {
        out += ',';
      }
      out += std::to_string(device);
    }
  }
  return out.empty() ? "none" : out;
}

// Drops the devices at the end of `gpu` that nothing counts on any more, so a
// usage built by adds and removals equals one recounted from scratch.
void TrimDevices(GpuUsage& gpu) {
  while (!gpu.used.empty() && gpu.used.back() == 0 && gpu.pods.back() == 0) {
    gpu.used.pop_back();
    gpu.pods.pop_back();
  }
}

bool IsEmpty(const GpuUsage& gpu) {
  return gpu.used.empty() && gpu.pods.empty() && gpu.unassigned == 0 && gpu.unhealthy == 0;
}

}  // namespace

bool GpuAccounting::Counts(const model::PodInfo& pod) const {
  return GpuMemoryRequest(pod, convention_) > 0;
}

std::shared_ptr<const model::NodeState> GpuAccounting::AddPod(
    std::string_view node, std::shared_ptr<const model::NodeState> state,
    const model::PodInfo& pod, int sign) const {
  const int64_t memory = GpuMemoryRequest(pod, convention_);
  if (memory <= 0) {
    return state;
  }
  auto next = std::make_shared<GpuNodeState>();
  if (state != nullptr) {
    next->gpu = static_cast<const GpuNodeState&>(*state).gpu;
  } else {
    next->gpu.unhealthy = UnhealthyMask(node);
  }
  GpuUsage& gpu = next->gpu;
  const std::optional<int> device = GpuDeviceIndex(pod, convention_);
  if (!device.has_value()) {
    gpu.unassigned += sign * memory;
  } else {
    const size_t index = static_cast<size_t>(*device);
    if (gpu.used.size() <= index) {
      gpu.used.resize(index + 1, 0);
      gpu.pods.resize(index + 1, 0);
    }
    gpu.used[index] += sign * memory;
    gpu.pods[index] += static_cast<int32_t>(sign);
    if (sign < 0) {
      TrimDevices(gpu);
    }
  }
  if (IsEmpty(gpu)) {
    return nullptr;
  }
  return next;
}

std::shared_ptr<const model::NodeState> GpuAccounting::Refresh(
    std::string_view node, std::shared_ptr<const model::NodeState> state) const {
  const uint64_t mask = UnhealthyMask(node);
  const auto* current = static_cast<const GpuNodeState*>(state.get());
  if ((current != nullptr ? current->gpu.unhealthy : 0) == mask) {
    return state;
  }
  auto next = std::make_shared<GpuNodeState>();
  if (current != nullptr) {
    next->gpu = current->gpu;
  }
  next->gpu.unhealthy = mask;
  if (IsEmpty(next->gpu)) {
    return nullptr;
  }
  return next;
}

std::string GpuAccounting::EncodeState(const model::NodeState& state) const {
  const GpuUsage& gpu = static_cast<const GpuNodeState&>(state).gpu;
  return nlohmann::json{{"used", std::vector<int64_t>(gpu.used.begin(), gpu.used.end())},
                        {"pods", std::vector<int32_t>(gpu.pods.begin(), gpu.pods.end())},
                        {"unassigned", gpu.unassigned},
                        {"unhealthy", gpu.unhealthy}}
      .dump();
}

StatusOr<std::shared_ptr<const model::NodeState>> GpuAccounting::DecodeState(
    std::string_view json) const {
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, false);
  auto invalid = [](std::string_view what) {
    return InvalidArgumentError("GpuShare state: " + std::string(what));
  };
  if (!doc.is_object() || !doc.contains("used") || !doc["used"].is_array() ||
      !doc.contains("pods") || !doc["pods"].is_array() ||
      doc["used"].size() != doc["pods"].size()) {
    return invalid("expected used and pods, two arrays of one length");
  }
  if (doc["used"].size() > static_cast<size_t>(kMaxGpuDevices)) {
    return invalid("more devices than " + std::to_string(kMaxGpuDevices));
  }
  auto next = std::make_shared<GpuNodeState>();
  GpuUsage& gpu = next->gpu;
  for (size_t i = 0; i < doc["used"].size(); ++i) {
    const nlohmann::json& used = doc["used"][i];
    const nlohmann::json& pods = doc["pods"][i];
    if (!used.is_number_integer() || !pods.is_number_integer() ||
        pods.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
        pods.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return invalid("used and pods: expected integers");
    }
    gpu.used.push_back(used.get<int64_t>());
    gpu.pods.push_back(static_cast<int32_t>(pods.get<int64_t>()));
  }
  if (!doc.contains("unassigned") || !doc["unassigned"].is_number_integer() ||
      !doc.contains("unhealthy") || !doc["unhealthy"].is_number_unsigned()) {
    return invalid("expected unassigned (an integer) and unhealthy (a device mask)");
  }
  gpu.unassigned = doc["unassigned"].get<int64_t>();
  gpu.unhealthy = doc["unhealthy"].get<uint64_t>();
  if (IsEmpty(gpu)) {
    return std::shared_ptr<const model::NodeState>();
  }
  return std::shared_ptr<const model::NodeState>(std::move(next));
}

uint64_t GpuAccounting::UnhealthyMask(std::string_view node) const {
  const auto it = unhealthy_.find(node);
  return it != unhealthy_.end() ? it->second : 0;
}

GpuAccounting::Unhealthy GpuAccounting::Read(const wire::RawObject& config_map) const {
  const std::optional<std::string_view> node =
      UnhealthyConfigMapNode(config_map.namespace_name, config_map.name, convention_);
  if (!node.has_value()) {
    return {};
  }
  if (const Status decoded = decoder_.DecodeStringMap(config_map.json, "data", data_);
      !decoded.ok()) {
    // The API server validated it; a body that does not decode lists no
    // device, as an absent key does.
    spdlog::warn("GpuShare: ConfigMap {}/{}: {}; no unhealthy device read",
                 config_map.namespace_name, config_map.name, decoded.message());
  }
  std::string_view devices;
  for (const auto& [key, value] : data_) {
    if (key == convention_.unhealthy_key) {
      devices = value;
      break;
    }
  }
  int invalid = 0;
  const uint64_t mask = ParseUnhealthyDevices(devices, &invalid);
  if (invalid > 0) {
    spdlog::warn(
        "GpuShare: ConfigMap {}/{}: {} entries of key {} are not device indexes in [0, {}); "
        "ignored",
        config_map.namespace_name, config_map.name, invalid, convention_.unhealthy_key,
        kMaxGpuDevices);
  }
  return {*node, mask};
}

void GpuAccounting::SetUnhealthy(std::string_view node, uint64_t mask, NodeRefresher& refresh) {
  const auto it = unhealthy_.find(node);
  const uint64_t old = it != unhealthy_.end() ? it->second : 0;
  if (old == mask) {
    return;
  }
  spdlog::info("GpuShare: unhealthy GPU devices of node {}: {} (were {})", node,
               DeviceList(mask), DeviceList(old));
  if (mask == 0) {
    unhealthy_.erase(it);
  } else if (it == unhealthy_.end()) {
    unhealthy_.emplace(std::string(node), mask);
  } else {
    it->second = mask;
  }
  refresh.RefreshNode(node);
}

void GpuAccounting::OnReplace(std::span<const wire::RawObject> objects,
                              NodeRefresher& refresh) {
  std::unordered_map<std::string, uint64_t, StringHash, std::equal_to<>> fresh;
  for (const wire::RawObject& object : objects) {
    if (const Unhealthy read = Read(object); !read.node.empty()) {
      fresh.insert_or_assign(std::string(read.node), read.mask);
    }
  }
  // Owned names: SetUnhealthy erases keys of `unhealthy_` while this runs.
  std::vector<std::pair<std::string, uint64_t>> changes;
  for (const auto& [node, mask] : unhealthy_) {
    if (!fresh.contains(node)) {
      changes.emplace_back(node, 0);  // its ConfigMap disappeared
    }
  }
  for (auto& [node, mask] : fresh) {
    changes.emplace_back(node, mask);
  }
  for (const auto& [node, mask] : changes) {
    SetUnhealthy(node, mask, refresh);
  }
}

void GpuAccounting::OnUpsert(const wire::RawObject& object, NodeRefresher& refresh) {
  if (const Unhealthy read = Read(object); !read.node.empty()) {
    SetUnhealthy(read.node, read.mask, refresh);
  }
}

void GpuAccounting::OnDelete(const wire::RawObject& object, NodeRefresher& refresh) {
  const std::optional<std::string_view> node =
      UnhealthyConfigMapNode(object.namespace_name, object.name, convention_);
  if (node.has_value()) {
    SetUnhealthy(*node, 0, refresh);
  }
}

}  // namespace schedext::policy::gpushare
