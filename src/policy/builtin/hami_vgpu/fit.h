// HAMi's placement of one pod on one node's vGPUs, as its scheduler computes
// it (pkg/scheduler/score.go fitInDevices and scoreNode, pkg/device/nvidia
// Fit, pkg/scheduler/policy's device order and node score), on the devices a
// node registered and the usage schedext counted on them.
//
// Called per node from Filter and Score (and once at bind): no allocation,
// no lock. The caller's `on_chosen` sees every device chosen.
#ifndef SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_FIT_H_
#define SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_FIT_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

#include "policy/builtin/hami_vgpu/protocol.h"
#include "schedext/model/pod_info.h"

namespace schedext::policy::hami {

// What the pods counted on a node use of one device.
struct DeviceUse {
  int64_t used = 0;  // vGPUs
  int64_t memory = 0;
  int64_t cores = 0;
};
using NodeUse = std::array<DeviceUse, kMaxDevices>;

enum class GpuPolicy : uint8_t { kBinpack, kSpread };
enum class NodePolicy : uint8_t { kBinpack, kSpread };

// Why a pod does not fit: the category HAMi counts most devices under for
// the container that failed. Each maps to one fixed reason text (Reason()).
enum class Misfit : uint8_t {
  kNone,
  kTooFewDevices,      // fewer NVIDIA devices than vGPUs asked for
  kUnhealthy,          // CardNotHealth
  kTypeMismatch,       // CardTypeMismatch: gputype / vgpu-mode, MIG devices
  kUuidMismatch,       // CardUUIDMismatch
  kNuma,               // NumaNotFit
  kSplitsExhausted,    // CardTimeSlicingExhausted
  kMemory,             // CardInsufficientMemory
  kCores,              // CardInsufficientCore, ComputeUnitsExhausted
  kExclusive,          // ExclusiveDeviceAllocateConflict
};

// The FailedNodes text of a misfit; short and without numbers, so that
// kube-scheduler counts every node with the same problem under one text.
std::string_view Reason(Misfit misfit);
// Whether evicting pods cannot cure it (device properties, not usage).
bool Unresolvable(Misfit misfit);

struct FitResult {
  Misfit misfit = Misfit::kNone;
  NodeUse after{};  // usage with the pod placed (peak of init and app containers)
};

// A device chosen for container `container` (init containers first, then
// the regular ones: the order of HAMi's annotation entries).
struct Choice {
  size_t container = 0;
  int device = 0;  // index into the node's devices
  int64_t memory = 0;
  int64_t cores = 0;
};

// Places every container's request: init containers one at a time on the
// node's usage, then the regular containers cumulatively, each on the
// devices in `gpu_policy` order (HAMi's sort, redone per container).
// `on_chosen(const Choice&)` per chosen device, in annotation order. Devices
// whose type does not contain "NVIDIA" (case-insensitive) are invisible, as
// in HAMi's getNodeResources.
template <typename OnChosen>
FitResult FitPod(std::span<const Device> devices, const NodeUse& use, const model::PodInfo& pod,
                 const ResourceNames& names, const PodRules& rules, GpuPolicy gpu_policy,
                 OnChosen&& on_chosen);

// HAMi's node score on the usage after placing the pod: 10 × (vGPUs used /
// split count + cores used / cores + memory used / memory) over the node's
// NVIDIA devices, mapped onto [0, 100] (binpack: fuller is higher; spread:
// emptier is higher).
int64_t NodeScore(std::span<const Device> devices, const NodeUse& after, NodePolicy policy);

// ---- implementation ----

// Fits one container request (HAMi's Fit); `order` is the persistent device
// order (indices), re-sorted here. Fills chosen[0..nums) on success.
Misfit FitContainer(std::span<const Device> devices, NodeUse& use,
                    std::array<int, kMaxDevices>& order, int visible,
                    const ContainerRequest& request, const PodRules& rules,
                    GpuPolicy gpu_policy, std::array<Choice, kMaxDevices>& chosen);
// The NVIDIA devices in registration order; returns how many.
int VisibleDevices(std::span<const Device> devices, std::array<int, kMaxDevices>& order);

template <typename OnChosen>
FitResult FitPod(std::span<const Device> devices, const NodeUse& use, const model::PodInfo& pod,
                 const ResourceNames& names, const PodRules& rules, GpuPolicy gpu_policy,
                 OnChosen&& on_chosen) {
  FitResult result;
  std::array<int, kMaxDevices> base_order{};
  const int visible = VisibleDevices(devices, base_order);
  std::array<Choice, kMaxDevices> chosen{};
  NodeUse peak = use;
  size_t container = 0;
  for (const model::ContainerResources& c : pod.init_containers) {
    const ContainerRequest request = RequestOf(c, names);
    if (request.nums > 0) {
      NodeUse scratch = use;
      std::array<int, kMaxDevices> order = base_order;
      const Misfit misfit =
          FitContainer(devices, scratch, order, visible, request, rules, gpu_policy, chosen);
      if (misfit != Misfit::kNone) {
        result.misfit = misfit;
        return result;
      }
      for (int i = 0; i < static_cast<int>(request.nums); ++i) {
        chosen[static_cast<size_t>(i)].container = container;
        on_chosen(chosen[static_cast<size_t>(i)]);
      }
      for (size_t d = 0; d < devices.size(); ++d) {
        peak[d].used = std::max(peak[d].used, scratch[d].used);
        peak[d].memory = std::max(peak[d].memory, scratch[d].memory);
        peak[d].cores = std::max(peak[d].cores, scratch[d].cores);
      }
    }
    ++container;
  }
  NodeUse app = use;
  std::array<int, kMaxDevices> order = base_order;
  for (const model::ContainerResources& c : pod.containers) {
    const ContainerRequest request = RequestOf(c, names);
    if (request.nums > 0) {
      const Misfit misfit =
          FitContainer(devices, app, order, visible, request, rules, gpu_policy, chosen);
      if (misfit != Misfit::kNone) {
        result.misfit = misfit;
        return result;
      }
      for (int i = 0; i < static_cast<int>(request.nums); ++i) {
        chosen[static_cast<size_t>(i)].container = container;
        on_chosen(chosen[static_cast<size_t>(i)]);
      }
    }
    ++container;
  }
  for (size_t d = 0; d < devices.size(); ++d) {
    result.after[d].used = std::max(peak[d].used, app[d].used);
    result.after[d].memory = std::max(peak[d].memory, app[d].memory);
    result.after[d].cores = std::max(peak[d].cores, app[d].cores);
  }
  return result;
}

}  // namespace schedext::policy::hami

#endif  // SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_FIT_H_
