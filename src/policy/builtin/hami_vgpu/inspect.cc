#include "policy/builtin/hami_vgpu/inspect.h"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "policy/builtin/hami_vgpu/accounting.h"
#include "policy/builtin/hami_vgpu/fit.h"
#include "policy/builtin/hami_vgpu/protocol.h"

namespace schedext::policy::hami {
namespace {

using OrderedJson = nlohmann::ordered_json;
constexpr auto kReplace = nlohmann::json::error_handler_t::replace;

struct PodOnDevice {
  std::string namespace_name;
  std::string name;
  std::string uid;
  int64_t vgpus = 0;
  int64_t memory = 0;
  int64_t cores = 0;
  bool assumed = false;
};

// node name → device UUID → pods.
using Holders = std::map<std::string, std::map<std::string, std::vector<PodOnDevice>>, std::less<>>;

int Reply(int status, const OrderedJson& json, std::string& body) {
  body = json.dump(-1, ' ', false, kReplace);
  body.push_back('\n');
  return status;
}

int ErrorReply(int status, std::string_view message, std::string& body) {
  OrderedJson reply;
  reply["Error"] = message;
  return Reply(status, reply, body);
}

Holders CollectHolders(const ClusterView& snapshot) {
  Holders holders;
  snapshot.ForEachPod([&](const model::PodInfo& pod, bool assumed) {
    const std::optional<std::string_view> allocated = pod.annotations.Find(kAllocatedAnnotation);
    if (!allocated.has_value()) {
      return;
    }
    std::string_view node = pod.node_name;
    if (node.empty()) {
      node = pod.annotations.Find(kAssignedNodeAnnotation).value_or("");
    }
    if (node.empty()) {
      return;
    }
    auto& devices = holders[std::string(node)];
    ForEachAllocated(*allocated, [&](const AllocatedDevice& d) {
      std::vector<PodOnDevice>& pods = devices[std::string(d.uuid)];
      auto it = std::find_if(pods.begin(), pods.end(),
                             [&](const PodOnDevice& p) { return p.uid == pod.uid; });
      if (it == pods.end()) {
        pods.push_back({std::string(pod.namespace_name), std::string(pod.name),
                        std::string(pod.uid), 0, 0, 0, assumed});
        it = pods.end() - 1;
      }
      ++it->vgpus;
      it->memory += d.memory;
      it->cores += d.cores;
    });
  });
  for (auto& [node, devices] : holders) {
    for (auto& [uuid, pods] : devices) {
      std::sort(pods.begin(), pods.end(), [](const PodOnDevice& a, const PodOnDevice& b) {
        return std::tie(a.namespace_name, a.name) < std::tie(b.namespace_name, b.name);
      });
    }
  }
  return holders;
}

// The node's registered devices and whether its handshake leaves them
// usable; false when it registers none.
bool ReadNode(const model::NodeInfo& node, std::string_view count_resource, int64_t now_unix,
              NodeDevices& devices, bool& usable) {
  const std::optional<std::string_view> text = node.annotations.Find(kRegisterAnnotation);
  if (!text.has_value() || !DecodeRegister(*text, devices) || devices.size == 0) {
    return false;
  }
  const std::optional<std::string_view> handshake = node.annotations.Find(kHandshakeAnnotation);
  usable = !(handshake.has_value() && HandshakeStale(*handshake, now_unix) &&
             node.allocatable.Get(count_resource) <= 0);
  return true;
}

std::optional<OrderedJson> NodeJson(const model::NodeInfo& node, NodeStateSlot slot,
                                    std::string_view count_resource, int64_t now_unix,
                                    const Holders& holders) {
  NodeDevices devices;
  bool usable = false;
  if (!ReadNode(node, count_resource, now_unix, devices, usable)) {
    return std::nullopt;
  }
  NodeUse use;
  const model::NodeState* state =
      node.usage != nullptr ? node.usage->states.Get(slot) : nullptr;
  UseOf(static_cast<const VgpuNodeState*>(state), devices.view(), use);
  const auto node_holders = holders.find(node.name);
  OrderedJson json;
  json["name"] = node.name;
  json["usable"] = usable;
  OrderedJson list = OrderedJson::array();
  for (int i = 0; i < devices.size; ++i) {
    const Device& d = devices.devices[static_cast<size_t>(i)];
    const DeviceUse& u = use[static_cast<size_t>(i)];
    OrderedJson device;
    device["uuid"] = d.uuid;
    device["index"] = d.index;
    device["type"] = d.type;
    device["numa"] = d.numa;
    device["mode"] = d.mode;
    device["healthy"] = d.healthy;
    device["vgpus"] = d.count;
    device["usedVgpus"] = u.used;
    device["memory"] = d.memory;
    device["usedMemory"] = u.memory;
    device["cores"] = d.cores;
    device["usedCores"] = u.cores;
    OrderedJson pods = OrderedJson::array();
    if (node_holders != holders.end()) {
      const auto found = node_holders->second.find(std::string(d.uuid));
      if (found != node_holders->second.end()) {
        for (const PodOnDevice& p : found->second) {
          OrderedJson pod;
          pod["namespace"] = p.namespace_name;
          pod["name"] = p.name;
          pod["uid"] = p.uid;
          pod["vgpus"] = p.vgpus;
          pod["memory"] = p.memory;
          pod["cores"] = p.cores;
          pod["assumed"] = p.assumed;
          pods.push_back(std::move(pod));
        }
      }
    }
    device["pods"] = std::move(pods);
    list.push_back(std::move(device));
  }
  json["devices"] = std::move(list);
  return json;
}

}  // namespace

int HamiInspect(const ClusterView* snapshot, NodeStateSlot slot, std::string_view count_resource,
                int64_t now_unix, std::string_view node, std::string& body) {
  if (snapshot == nullptr || !snapshot->synced()) {
    return ErrorReply(503, "hami inspect: the cluster cache has not synced yet", body);
  }
  const Holders holders = CollectHolders(*snapshot);
  if (!node.empty()) {
    const model::NodeInfo* info = snapshot->FindNode(node);
    std::optional<OrderedJson> json;
    if (info != nullptr) {
      json = NodeJson(*info, slot, count_resource, now_unix, holders);
    }
    if (!json.has_value()) {
      return ErrorReply(404, "hami inspect: no node \"" + std::string(node) + "\" with vGPUs",
                        body);
    }
    return Reply(200, *json, body);
  }
  std::vector<OrderedJson> nodes;
  snapshot->ForEachNode([&](const model::NodeInfo& info) {
    if (std::optional<OrderedJson> json =
            NodeJson(info, slot, count_resource, now_unix, holders)) {
      nodes.push_back(std::move(*json));
    }
  });
  std::sort(nodes.begin(), nodes.end(), [](const OrderedJson& a, const OrderedJson& b) {
    return a["name"].get_ref<const std::string&>() < b["name"].get_ref<const std::string&>();
  });
  OrderedJson reply;
  reply["nodes"] = nodes;
  return Reply(200, reply, body);
}

void AppendHamiMetrics(const ClusterView* snapshot, NodeStateSlot slot,
                       std::string_view count_resource, int64_t now_unix, std::string& out) {
  int64_t vgpus = 0, used_vgpus = 0, memory = 0, used_memory = 0, cores = 0, used_cores = 0;
  int64_t usable = 0, unhealthy = 0, stale = 0;
  if (snapshot != nullptr) {
    snapshot->ForEachNode([&](const model::NodeInfo& node) {
      NodeDevices devices;
      bool node_usable = false;
      if (!ReadNode(node, count_resource, now_unix, devices, node_usable)) {
        return;
      }
      NodeUse use;
      const model::NodeState* state =
          node.usage != nullptr ? node.usage->states.Get(slot) : nullptr;
      UseOf(static_cast<const VgpuNodeState*>(state), devices.view(), use);
      for (int i = 0; i < devices.size; ++i) {
        const Device& d = devices.devices[static_cast<size_t>(i)];
        const DeviceUse& u = use[static_cast<size_t>(i)];
        vgpus += d.count;
        used_vgpus += u.used;
        memory += d.memory;
        used_memory += u.memory;
        cores += d.cores;
        used_cores += u.cores;
        if (!node_usable) {
          ++stale;
        } else if (!d.healthy) {
          ++unhealthy;
        } else {
          ++usable;
        }
      }
    });
  }
  const auto family = [&out](std::string_view name, std::string_view help,
                             std::initializer_list<std::pair<std::string_view, int64_t>> samples) {
    out.append("# HELP ").append(name).append(" ").append(help).append("\n# TYPE ");
    out.append(name).append(" gauge\n");
    for (const auto& [state, value] : samples) {
      out.append(name).append("{state=\"").append(state).append("\"} ");
      out.append(std::to_string(value)).push_back('\n');
    }
  };
  family("schedext_hami_vgpus", "vGPUs (split counts) of the registered HAMi devices.",
         {{"total", vgpus}, {"used", used_vgpus}});
  family("schedext_hami_memory_mib", "Memory of the registered HAMi devices, in MiB.",
         {{"total", memory}, {"used", used_memory}});
  family("schedext_hami_cores", "Compute of the registered HAMi devices (100 per device).",
         {{"total", cores}, {"used", used_cores}});
  family("schedext_hami_devices",
         "Registered HAMi devices: usable, unhealthy, or on a node whose handshake is stale.",
         {{"usable", usable}, {"unhealthy", unhealthy}, {"stale", stale}});
}

}  // namespace schedext::policy::hami
