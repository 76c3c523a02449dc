// GPU memory sharing: the conventions of the gpushare device plugin
// (AliyunContainerService/gpushare-device-plugin) and the arithmetic every
// part of the GpuShare policy shares — the per-device accounting it keeps in
// the cluster cache, filtering and scoring, Reserve choosing a device,
// /gpushare/inspect and the gauges.
//
// The device plugin's model: a node advertises status.capacity
// `aliyun.com/gpu-mem` (total GPU memory of the node, in the plugin's unit,
// GiB by default) and `aliyun.com/gpu-count` (devices); every device has
// gpu-mem / gpu-count (integer division, as the plugin and the original
// extender compute it). A pod asks for memory in its regular containers'
// limits of `aliyun.com/gpu-mem`; the sum is the pod's request and must fit on
// ONE device. At bind the extender writes the chosen device into the pod's
// annotations; the plugin's Allocate finds the pod by those annotations
// (ASSIGNED=false, oldest ASSUME_TIME with that request) and flips ASSIGNED.
//
// Thread-safety: plain values and pure functions.
#ifndef SCHEDEXT_POLICY_BUILTIN_GPUSHARE_CONVENTION_H_
#define SCHEDEXT_POLICY_BUILTIN_GPUSHARE_CONVENTION_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/builtin/gpushare/device_vector.h"
#include "schedext/model/name_table.h"
#include "schedext/model/node_info.h"
#include "schedext/model/pod_info.h"

namespace schedext::policy::gpushare {

using model::NodeInfo;
using model::PodInfo;

// Device indexes are bits of a 64-bit mask (GpuUsage::unhealthy) and the
// device count of a node is clamped to it.
inline constexpr int kMaxGpuDevices = 64;

// Shared-GPU state of one node, as the policy's accounting counts it in the
// cluster cache (accounting.h). Laid out for the per-node Filter and Score:
// the unhealthy mask and the used amounts of the first kInlineDevices devices
// sit together at the start (device_vector.h), the pod counts they do not
// read after them.
struct GpuUsage {
  GpuUsage() = default;
  // In the order the fields were once declared (tests spell usages so).
  GpuUsage(DeviceVector<int64_t> used_memory, DeviceVector<int32_t> pods_on,
           int64_t unassigned_memory, uint64_t unhealthy_mask)
      : unhealthy(unhealthy_mask),
        used(std::move(used_memory)),
        pods(std::move(pods_on)),
        unassigned(unassigned_memory) {}

  // Bit i: device i is listed in the node's unhealthy ConfigMap.
  uint64_t unhealthy = 0;
  // Per device index: Σ GPU memory (in the device plugin's unit) of the pods
  // bound or reserved here whose index annotation names that device, and how
  // many they are. Sized to the highest index seen (not to the node's count).
  DeviceVector<int64_t> used;
  DeviceVector<int32_t> pods;
  // GPU memory of pods counted on this node that ask for GPU memory but carry
  // no (valid) device index annotation: on no device; shown by inspect.
  int64_t unassigned = 0;

  int64_t UsedOn(int device) const {
    return device >= 0 && static_cast<size_t>(device) < used.size() ? used[device] : 0;
  }
  int32_t PodsOn(int device) const {
    return device >= 0 && static_cast<size_t>(device) < pods.size() ? pods[device] : 0;
  }
  bool Unhealthy(int device) const {
    return device >= 0 && device < kMaxGpuDevices && ((unhealthy >> device) & 1U) != 0;
  }
};

// Every name is configurable (the policy's args, gpushare.h); the defaults
// are the device plugin's.
struct GpuShareConvention {
  std::string memory_resource = "aliyun.com/gpu-mem";
  std::string count_resource = "aliyun.com/gpu-count";
  std::string index_annotation = "ALIYUN_COM_GPU_MEM_IDX";
  std::string pod_memory_annotation = "ALIYUN_COM_GPU_MEM_POD";
  std::string device_memory_annotation = "ALIYUN_COM_GPU_MEM_DEV";
  std::string assigned_annotation = "ALIYUN_COM_GPU_MEM_ASSIGNED";
  std::string assume_time_annotation = "ALIYUN_COM_GPU_MEM_ASSUME_TIME";
  // ConfigMap <unhealthy_namespace>/<unhealthy_prefix><node>, key
  // `unhealthy_key`: comma-separated device indexes that take no new pods.
  std::string unhealthy_namespace = "kube-system";
  std::string unhealthy_prefix = "unhealthy-gpu-";
  std::string unhealthy_key = "gpus";
  // How amounts are written in messages ("8 GiB"); the plugin's unit.
  std::string unit = "GiB";

  bool operator==(const GpuShareConvention&) const = default;
};

// The pod's GPU memory request: Σ over regular containers of
// limits[memory_resource] (PodInfo::limits). 0: not a GPU-sharing pod.
int64_t GpuMemoryRequest(const PodInfo& pod, const GpuShareConvention& convention);

// The device index the pod's index annotation names: a decimal integer in
// [0, kMaxGpuDevices); nullopt when absent or anything else.
std::optional<int> GpuDeviceIndex(const PodInfo& pod, const GpuShareConvention& convention);

// The devices of a node, from status.capacity.
struct GpuShape {
  int count = 0;               // capacity[count_resource], clamped to kMaxGpuDevices
  int64_t total_memory = 0;    // capacity[memory_resource]
  int64_t device_memory = 0;   // total_memory / count (0 when count is 0)
  bool has_gpus() const { return count > 0 && device_memory > 0; }
};
GpuShape NodeGpuShape(const NodeInfo& node, const GpuShareConvention& convention);

// The convention's two resource names interned (model/name_table.h), for the
// per-node loops: the same shape as above without reading resource-name text.
struct GpuResourceNames {
  model::InternedName count;
  model::InternedName memory;

  // Views into `convention`, which must outlive the result; `table` may be
  // null (text lookups).
  static GpuResourceNames Of(const GpuShareConvention& convention, model::NameTable* table) {
    return {model::InternedName::Of(convention.count_resource, table),
            model::InternedName::Of(convention.memory_resource, table)};
  }
};
GpuShape NodeGpuShape(const NodeInfo& node, const GpuResourceNames& names);

// The comma-separated device indexes of an unhealthy ConfigMap's value as a
// mask: spaces around entries ignored; entries that are not an index in
// [0, kMaxGpuDevices) are skipped and counted in `*invalid` (may be null).
uint64_t ParseUnhealthyDevices(std::string_view text, int* invalid = nullptr);

// The node name an unhealthy ConfigMap is about, or nullopt when
// `namespace_name`/`name` is not one (wrong namespace or prefix, or nothing
// after the prefix).
std::optional<std::string_view> UnhealthyConfigMapNode(std::string_view namespace_name,
                                                       std::string_view name,
                                                       const GpuShareConvention& convention);

// Where a request of `request` memory would go on a node.
struct GpuPlacement {
  // Best fit: the healthy device with the least free memory that still holds
  // the request, ties to the lowest index; -1 when none has room now.
  int device = -1;
  int64_t free_after = 0;  // on `device`, after placing the request
  // The most free memory on any healthy device now (for messages).
  int64_t largest_free = 0;
  // Some healthy device is large enough when empty (so evicting pods could
  // make room); false: the node can never hold the request as it is.
  bool could_fit = false;
};

// Best fit over the devices of one node, whatever holds them: `devices` has
// count(), device_memory(), healthy(d) and free(d) for d in [0, count()).
// The node's shape and usage (UsageDevices) and its node summary
// (summary.h) both answer through this one rule, so they cannot disagree.
template <typename Devices>
GpuPlacement PlaceBestFit(const Devices& devices, int64_t request) {
  GpuPlacement placement;
  const int count = devices.count();
  for (int device = 0; device < count; ++device) {
    if (!devices.healthy(device)) {
      continue;
    }
    const int64_t free = devices.free(device);
    placement.largest_free = std::max(placement.largest_free, free);
    if (devices.device_memory() >= request) {
      placement.could_fit = true;
    }
    if (free >= request && (placement.device < 0 || free - request < placement.free_after)) {
      placement.device = device;
      placement.free_after = free - request;
    }
  }
  return placement;
}

// A node's devices as its capacity (`shape`) and the cache's GpuUsage give
// them. `usage` may be null (nothing counted on the node). Free memory of a
// device = device_memory - used, floored at 0 (an over-committed device has
// none). The usage's fields are read once, then plain values per device.
class UsageDevices {
 public:
  UsageDevices(const GpuShape& shape, const GpuUsage* usage)
      : count_(shape.count),
        device_memory_(shape.device_memory),
        unhealthy_(usage != nullptr ? usage->unhealthy : 0),
        used_(usage != nullptr ? usage->used.data() : nullptr),
        counted_(usage != nullptr ? static_cast<int>(usage->used.size()) : 0) {}

  int count() const { return count_; }
  int64_t device_memory() const { return device_memory_; }
  bool healthy(int device) const {
    return device >= kMaxGpuDevices || ((unhealthy_ >> device) & 1U) == 0;
  }
  int64_t free(int device) const {
    const int64_t used = device < counted_ ? used_[device] : 0;
    return std::max<int64_t>(0, device_memory_ - used);
  }

 private:
  int count_;
  int64_t device_memory_;
  uint64_t unhealthy_;
  const int64_t* used_;
  int counted_;
};

// PlaceBestFit over UsageDevices(shape, usage).
inline GpuPlacement PlaceOnGpu(const GpuShape& shape, const GpuUsage* usage, int64_t request) {
  return PlaceBestFit(UsageDevices(shape, usage), request);
}

}  // namespace schedext::policy::gpushare

#endif  // SCHEDEXT_POLICY_BUILTIN_GPUSHARE_CONVENTION_H_
