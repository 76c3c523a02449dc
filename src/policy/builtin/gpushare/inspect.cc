// GET /gpushare/inspect: an operator endpoint, called by hand or by a
// dashboard, never on the scheduling path. It walks every pod of one snapshot
// (O(pods)) and builds the reply with nlohmann::ordered_json, whose member
// order follows insertion, so the documented field order holds.
#include "policy/builtin/gpushare/inspect.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/builtin/gpushare/accounting.h"

namespace schedext::policy::gpushare {
namespace {

using OrderedJson = nlohmann::ordered_json;
// Names come from the API server and should be UTF-8; if one is not, the
// operator still gets a reply rather than a 500.
constexpr auto kReplace = OrderedJson::error_handler_t::replace;

struct PodEntry {
  std::string_view pod_namespace;
  std::string_view name;
  std::string_view uid;
  int64_t memory = 0;
  bool assumed = false;
};

struct NodeEntry {
  const model::NodeInfo* node = nullptr;
  GpuShape shape;
  // Per device index; a pod without a valid index is counted by the cache as
  // unassigned and listed on no device.
  std::map<int, std::vector<PodEntry>> pods;
};

int ErrorReply(int status, std::string_view message, std::string& body) {
  OrderedJson reply;
  reply["Error"] = message;
  body = reply.dump(-1, ' ', false, kReplace);
  body.push_back('\n');
  return status;
}

OrderedJson DeviceJson(int index, const NodeEntry& entry, const GpuUsage* gpu,
                       std::vector<PodEntry>* pods) {
  // A device beyond the node's count only shows up when a pod's annotation
  // names it (a stale index after the node lost GPUs); it has no memory.
  const int64_t total = index < entry.shape.count ? entry.shape.device_memory : 0;
  const int64_t used = gpu != nullptr ? gpu->UsedOn(index) : 0;
  OrderedJson device;
  device["index"] = index;
  device["healthy"] = gpu == nullptr || !gpu->Unhealthy(index);
  device["totalMemory"] = total;
  device["usedMemory"] = used;
  device["freeMemory"] = std::max<int64_t>(0, total - used);
  OrderedJson list = OrderedJson::array();
  if (pods != nullptr) {
    std::sort(pods->begin(), pods->end(), [](const PodEntry& a, const PodEntry& b) {
      return std::tie(a.pod_namespace, a.name, a.uid) < std::tie(b.pod_namespace, b.name, b.uid);
    });
    for (const PodEntry& pod : *pods) {
      OrderedJson p;
      p["namespace"] = pod.pod_namespace;
      p["name"] = pod.name;
      p["uid"] = pod.uid;
      p["memory"] = pod.memory;
      p["assumed"] = pod.assumed;
      list.push_back(std::move(p));
    }
  }
  device["pods"] = std::move(list);
  return device;
}

OrderedJson NodeJson(NodeEntry& entry, NodeStateSlot slot) {
  // The cache's nodes carry their usage (null only without a cluster cache).
  static const GpuUsage kNothing;
  const GpuUsage* gpu = UsageOf(*entry.node, slot, kNothing);
  int devices = entry.shape.count;
  if (gpu != nullptr) {
    for (int i = entry.shape.count; i < static_cast<int>(gpu->used.size()); ++i) {
      if (gpu->UsedOn(i) > 0 || gpu->PodsOn(i) > 0) {
        devices = i + 1;
      }
    }
  }
  if (!entry.pods.empty()) {
    devices = std::max(devices, entry.pods.rbegin()->first + 1);
  }
  OrderedJson list = OrderedJson::array();
  int64_t used = 0;
  int64_t free = 0;
  for (int i = 0; i < devices; ++i) {
    auto it = entry.pods.find(i);
    const bool in_shape = i < entry.shape.count;
    const bool has_pods = it != entry.pods.end() || (gpu != nullptr && gpu->UsedOn(i) > 0);
    if (!in_shape && !has_pods) {
      continue;
    }
    OrderedJson device =
        DeviceJson(i, entry, gpu, it != entry.pods.end() ? &it->second : nullptr);
    used += device["usedMemory"].get<int64_t>();
    free += device["freeMemory"].get<int64_t>();
    list.push_back(std::move(device));
  }
  OrderedJson node;
  node["name"] = entry.node->name;
  node["gpuCount"] = entry.shape.count;
  node["totalMemory"] = entry.shape.total_memory;
  node["usedMemory"] = used;
  node["freeMemory"] = free;
  node["unassignedMemory"] = gpu != nullptr ? gpu->unassigned : 0;
  node["devices"] = std::move(list);
  return node;
}

}  // namespace

int GpuShareInspect(const ClusterView* snapshot, const GpuShareConvention& convention,
                    NodeStateSlot slot, std::string_view node, std::string& body) {
  if (snapshot == nullptr || !snapshot->synced()) {
    return ErrorReply(503, "gpushare inspect: the cluster cache has not synced yet", body);
  }
  std::map<std::string_view, NodeEntry> nodes;  // sorted by name
  if (node.empty()) {
    snapshot->ForEachNode([&](const model::NodeInfo& n) {
      const GpuShape shape = NodeGpuShape(n, convention);
      if (shape.has_gpus()) {
        nodes[n.name] = NodeEntry{&n, shape, {}};
      }
    });
  } else {
    const model::NodeInfo* n = snapshot->FindNode(node);
    const GpuShape shape =
        n != nullptr ? NodeGpuShape(*n, convention) : GpuShape{};
    if (!shape.has_gpus()) {
      std::string message = "gpushare inspect: node \"";
      message.append(node).append(n == nullptr ? "\" is unknown to schedext"
                                               : "\" has no shared GPUs (capacity " +
                                                     convention.memory_resource + " / " +
                                                     convention.count_resource + ")");
      return ErrorReply(404, message, body);
    }
    nodes[n->name] = NodeEntry{n, shape, {}};
  }
  snapshot->ForEachPod([&](const model::PodInfo& pod, bool assumed) {
    if (pod.node_name.empty()) {
      return;  // pending: counts nowhere
    }
    auto it = nodes.find(pod.node_name);
    if (it == nodes.end()) {
      return;
    }
    const int64_t memory = GpuMemoryRequest(pod, convention);
    const std::optional<int> index = GpuDeviceIndex(pod, convention);
    if (memory <= 0 || !index) {
      return;
    }
    it->second.pods[*index].push_back({pod.namespace_name, pod.name, pod.uid, memory, assumed});
  });

  if (!node.empty()) {
    body = NodeJson(nodes.begin()->second, slot).dump(-1, ' ', false, kReplace);
  } else {
    OrderedJson reply;
    reply["unit"] = convention.unit;
    OrderedJson list = OrderedJson::array();
    for (auto& [name, entry] : nodes) {
      list.push_back(NodeJson(entry, slot));
    }
    reply["nodes"] = std::move(list);
    body = reply.dump(-1, ' ', false, kReplace);
  }
  body.push_back('\n');
  return 200;
}

void AppendGpuShareMetrics(const ClusterView* snapshot, const GpuShareConvention& convention,
                           NodeStateSlot slot, std::string& out) {
  static const GpuUsage kNothing;
  int64_t total = 0;
  int64_t used = 0;
  int64_t free = 0;
  int64_t unassigned = 0;
  uint64_t healthy = 0;
  uint64_t unhealthy = 0;
  auto count = [&](const model::NodeInfo& node) {
    const GpuShape shape = NodeGpuShape(node, convention);
    if (!shape.has_gpus()) {
      return;
    }
    const GpuUsage* gpu = UsageOf(node, slot, kNothing);
    for (int i = 0; i < shape.count; ++i) {
      const int64_t on_device = gpu != nullptr ? gpu->UsedOn(i) : 0;
      const bool sick = gpu != nullptr && gpu->Unhealthy(i);
      total += shape.device_memory;
      used += on_device;
      if (sick) {
        ++unhealthy;
      } else {
        ++healthy;
        free += std::max<int64_t>(0, shape.device_memory - on_device);
      }
    }
    unassigned += gpu != nullptr ? gpu->unassigned : 0;
  };
  if (snapshot != nullptr) {
    snapshot->ForEachNode(count);
  }
  auto gauge = [&out](std::string_view series, int64_t value) {
    out.append(series).push_back(' ');
    out.append(std::to_string(std::max<int64_t>(0, value)));
    out.push_back('\n');
  };
  out.append("# HELP schedext_gpushare_memory Shared GPU memory of the nodes with GPUs (unit: ")
      .append(convention.unit)
      .append(").\n# TYPE schedext_gpushare_memory gauge\n");
  gauge("schedext_gpushare_memory{state=\"total\"}", total);
  gauge("schedext_gpushare_memory{state=\"used\"}", used);
  gauge("schedext_gpushare_memory{state=\"free\"}", free);
  out.append(
      "# HELP schedext_gpushare_devices GPU devices of the nodes with GPUs, by health (the "
      "unhealthy ConfigMaps).\n# TYPE schedext_gpushare_devices gauge\n");
  gauge("schedext_gpushare_devices{health=\"healthy\"}", static_cast<int64_t>(healthy));
  gauge("schedext_gpushare_devices{health=\"unhealthy\"}", static_cast<int64_t>(unhealthy));
  out.append(
      "# HELP schedext_gpushare_unassigned_memory GPU memory of pods counted on a node without "
      "a device index annotation.\n# TYPE schedext_gpushare_unassigned_memory gauge\n");
  gauge("schedext_gpushare_unassigned_memory", unassigned);
}

}  // namespace schedext::policy::gpushare
