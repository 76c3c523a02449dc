// HAMi's NVIDIA vGPU protocol (docs/hami.md names the HAMi source followed):
// the node annotations HAMi's device plugin writes, the container requests
// in HAMi's resource names, and the pod annotations its scheduler writes at
// bind and its device plugin reads back.
//
// Everything here is a pure function of its arguments. The decoders that the
// per-node hooks call (DecodeRegister, HandshakeStale, the pod rules) write
// into fixed-size values and never allocate, so that Filter and Score stay
// allocation-free; the encoders used at bind return strings.
#ifndef SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_PROTOCOL_H_
#define SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_PROTOCOL_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "schedext/model/pod_info.h"
#include "schedext/model/selectors.h"

namespace schedext::policy::hami {

// HAMi's names (pkg/device/nvidia, pkg/util, pkg/scheduler/policy).
inline constexpr std::string_view kRegisterAnnotation = "hami.io/node-nvidia-register";
inline constexpr std::string_view kHandshakeAnnotation = "hami.io/node-handshake";
inline constexpr std::string_view kToAllocateAnnotation = "hami.io/vgpu-devices-to-allocate";
inline constexpr std::string_view kAllocatedAnnotation = "hami.io/vgpu-devices-allocated";
inline constexpr std::string_view kAssignedNodeAnnotation = "hami.io/vgpu-node";
inline constexpr std::string_view kAssignedTimeAnnotation = "hami.io/vgpu-time";
inline constexpr std::string_view kBindTimeAnnotation = "hami.io/bind-time";
inline constexpr std::string_view kBindPhaseAnnotation = "hami.io/bind-phase";
inline constexpr std::string_view kBindPhaseAllocating = "allocating";
// pkg/util/nodelock: the node lock HAMi's scheduler takes before binding and
// its device plugin releases after allocating; older than this, it is free
// (NodeLockTimeout, HAMI_NODELOCK_EXPIRE's default).
inline constexpr std::string_view kNodeLockAnnotation = "hami.io/mutex.lock";
inline constexpr int64_t kNodeLockExpirySeconds = 300;
inline constexpr std::string_view kUseTypeAnnotation = "nvidia.com/use-gputype";
inline constexpr std::string_view kNoUseTypeAnnotation = "nvidia.com/nouse-gputype";
inline constexpr std::string_view kUseUuidAnnotation = "nvidia.com/use-gpuuuid";
inline constexpr std::string_view kNoUseUuidAnnotation = "nvidia.com/nouse-gpuuuid";
inline constexpr std::string_view kNumaBindAnnotation = "nvidia.com/numa-bind";
inline constexpr std::string_view kVgpuModeAnnotation = "nvidia.com/vgpu-mode";
inline constexpr std::string_view kNodePolicyAnnotation = "hami.io/node-scheduler-policy";
inline constexpr std::string_view kGpuPolicyAnnotation = "hami.io/gpu-scheduler-policy";
// The device type keyword HAMi writes in the pod annotations.
inline constexpr std::string_view kNvidiaType = "NVIDIA";
// A "Requesting_" handshake older than this marks the node's devices gone.
inline constexpr int64_t kHandshakeTimeoutSeconds = 60;

// Devices per node schedext reads; a register annotation with more is
// rejected as a whole (the node then has no usable device).
inline constexpr int kMaxDevices = 16;

// One device as the device plugin registered it. Views into the annotation.
struct Device {
  std::string_view uuid;
  std::string_view type;
  std::string_view mode;  // "hami-core" (default), "mig", "mps"
  int64_t count = 0;      // split count: vGPUs the device holds
  int64_t memory = 0;     // MiB
  int64_t cores = 0;      // 100 = the whole device
  int64_t numa = 0;
  int64_t index = 0;
  bool healthy = false;
};

struct NodeDevices {
  std::array<Device, kMaxDevices> devices{};
  int size = 0;
  std::span<const Device> view() const {
    return {devices.data(), static_cast<size_t>(size)};
  }
};

// Decodes the register annotation: a JSON array of device objects (HAMi's
// current form, keys id/index/count/devmem/devcore/type/numa/mode/health,
// other keys skipped) or the older text form "uuid,count,mem,cores,type,numa,
// health[,index,mode]:" repeated (7 or 9 fields, as HAMi's fallback decoder
// reads it). False, with `out` empty, for anything else: malformed text,
// more than kMaxDevices devices, JSON strings with escapes. No allocation.
bool DecodeRegister(std::string_view text, NodeDevices& out);

// Whether the handshake annotation says the device plugin stopped answering:
// "Requesting_<YYYY-MM-DD hh:mm:ss>" written more than
// kHandshakeTimeoutSeconds before `now_unix` (the time is read as UTC), or
// "Deleted_..." (HAMi's mark for a node it cleaned up). Any other value,
// including an unparsable time, is not stale, as in HAMi.
bool HandshakeStale(std::string_view value, int64_t now_unix);
// The first Unix second at which HandshakeStale(value, ·) holds: INT64_MIN
// for "Deleted_...", INT64_MAX when it never does.
int64_t HandshakeStaleFrom(std::string_view value);

// One container's request in HAMi's terms (ContainerDeviceRequest).
struct ContainerRequest {
  int64_t nums = 0;            // vGPUs, each on a different device
  int64_t memory = 0;          // MiB per vGPU; 0 with memory_percent
  int64_t memory_percent = 0;  // of the device's memory, when memory is 0
  int64_t cores = 0;           // percent of a device per vGPU
};

// HAMi's resource names and defaults (the scheduler's NvidiaConfig).
struct ResourceNames {
  std::string count = "nvidia.com/gpu";
  std::string memory = "nvidia.com/gpumem";
  std::string memory_percentage = "nvidia.com/gpumem-percentage";
  std::string cores = "nvidia.com/gpucores";
  int64_t default_memory = 0;  // MiB; 0: the whole device (100 %)
  int64_t default_cores = 0;
  bool operator==(const ResourceNames&) const = default;
};

// GenerateResourceRequests: every amount from the limits, else the requests.
ContainerRequest RequestOf(const model::ContainerResources& container, const ResourceNames& names);

// The pod annotations that restrict which devices a request may use.
struct PodRules {
  std::optional<std::string_view> use_types;
  std::optional<std::string_view> nouse_types;
  std::optional<std::string_view> use_uuids;
  std::optional<std::string_view> nouse_uuids;
  std::optional<std::string_view> mode;
  bool numa_bind = false;
  // Whether any rule reads device types, UUIDs or modes (a set annotation,
  // even a blank one), so that devices are told apart by their names.
  bool NamesDevices() const {
    return use_types.has_value() || nouse_types.has_value() || use_uuids.has_value() ||
           nouse_uuids.has_value() || mode.has_value();
  }
};
PodRules RulesOf(const model::StringMap& annotations);

// HAMi's checkType: the device type against use/nouse-gputype (comma
// lists, case-insensitive substring, blank entries ignored, a blank list is
// no constraint) and the device's mode as a substring of vgpu-mode.
bool TypeAllowed(const PodRules& rules, const Device& device);
// HAMi's CheckUUID: the uuid against use/nouse-gpuuuid (exact after
// trimming; a blank list is no constraint).
bool UuidAllowed(const PodRules& rules, const Device& device);

// One device chosen for one container.
struct ChosenDevice {
  std::string_view uuid;
  int64_t memory = 0;
  int64_t cores = 0;
};

// "uuid,NVIDIA,mem,cores:" per device, one ";"-terminated entry per container
// (EncodePodSingleDevice).
void AppendContainer(std::span<const ChosenDevice> devices, std::string& out);

// One device of a decoded allocation annotation.
struct AllocatedDevice {
  std::string_view uuid;
  int64_t memory = 0;
  int64_t cores = 0;
};
// Calls fn(AllocatedDevice) for every device of an allocation annotation;
// false (after calling fn for the entries before it) on a malformed entry.
template <typename Fn>
bool ForEachAllocated(std::string_view text, Fn&& fn);

// ---- implementation details ----
bool ParseInt64(std::string_view text, int64_t& out);
bool DecodeAllocatedEntry(std::string_view entry, AllocatedDevice& out);

template <typename Fn>
bool ForEachAllocated(std::string_view text, Fn&& fn) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find_first_of(":;", start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    const std::string_view entry = text.substr(start, end - start);
    if (!entry.empty()) {
      AllocatedDevice device;
      if (!DecodeAllocatedEntry(entry, device)) {
        return false;
      }
      fn(device);
    }
    start = end + 1;
  }
  return true;
}

}  // namespace schedext::policy::hami

#endif  // SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_PROTOCOL_H_
