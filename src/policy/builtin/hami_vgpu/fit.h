// HAMi's placement of one pod on one node's vGPUs, as its scheduler computes
// it (pkg/scheduler/score.go fitInDevices and scoreNode, pkg/device/nvidia
// Fit, pkg/scheduler/policy's device order and node score).
//
// Fit and score read a node as NodeFacts: its NVIDIA devices' numbers, the
// usage counted on them and the pod's type/UUID rules already applied. Two
// sources build them and must agree: FactsOf below, from the decoded
// register annotation (every pod, and the only one at bind), and the node
// summary (summary.h), for pods without type/UUID/mode rules. The common
// pod (one container asking, no NUMA binding) skips them: summary.h FitOne
// and ScoreOne decide it on the summary and must answer as FitPod and
// ScorePod do on its facts.
//
// Called per node from Filter and Score (and once at bind): no allocation,
// no lock. The caller's `on_chosen` sees every device chosen.
#ifndef SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_FIT_H_
#define SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_FIT_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "policy/builtin/hami_vgpu/protocol.h"
#include "schedext/model/pod_info.h"

namespace schedext::policy::hami {

// The per-node structs below have no member initializers: the hooks build
// them per node and set what they read ([0, size) of the arrays), and
// zeroing a kilobyte per node would cost more than the fit.

// What the pods counted on a node use of one device.
struct DeviceUse {
  int64_t used;  // vGPUs
  int64_t memory;
  int64_t cores;
};
using NodeUse = std::array<DeviceUse, kMaxDevices>;

// What fit and score read of one NVIDIA device.
struct DeviceFacts {
  int64_t count;   // split count
  int64_t memory;  // MiB
  int64_t cores;
  int64_t numa;
  bool healthy;
  bool type_allowed;  // the pod's type and mode rules allow it, and it is not MIG
  bool uuid_allowed;  // the pod's UUID rules allow it
  uint8_t index;      // position in the node's register annotation
};

// A node's NVIDIA devices in registration order (HAMi's getNodeResources
// skips devices whose type does not contain "NVIDIA", case-insensitive) and
// what is counted on them, by the same position. Only [0, size) is set.
struct NodeFacts {
  std::array<DeviceFacts, kMaxDevices> devices;
  NodeUse use;
  int size = 0;
};

// The facts of `devices` (decoded) with `use` (by the devices' positions,
// accounting.h UseOf) under the pod's `rules`.
void FactsOf(std::span<const Device> devices, const NodeUse& use, const PodRules& rules,
             NodeFacts& out);

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
  // Usage with the pod placed (peak of init and app containers), by
  // NodeFacts position; set only when misfit is kNone.
  NodeUse after;
};

// A pod's container requests in HAMi's terms (RequestOf), read once per
// request: init containers, then the regular ones.
struct PodRequest {
  std::vector<ContainerRequest> init;
  std::vector<ContainerRequest> app;
  bool AsksForVgpus() const;
};
PodRequest RequestOf(const model::PodInfo& pod, const ResourceNames& names);

// The MiB one vGPU of `request` takes on a device of `device_memory` MiB,
// as HAMi's Fit reads it (a percentage is of that device).
int64_t MemoryPerVgpu(const ContainerRequest& request, int64_t device_memory);
// Whether MemoryPerVgpu depends on the device (a percentage of its memory).
inline bool MemoryDependsOnDevice(const ContainerRequest& request) {
  return request.memory <= 0 && request.memory_percent != 101;
}

// A device chosen for container `container` (init containers first, then
// the regular ones: the order of HAMi's annotation entries).
struct Choice {
  size_t container;
  int device;  // index into NodeFacts::devices
  int64_t memory;
  int64_t cores;
};

// Places every container's request: init containers one at a time on the
// node's usage, then the regular containers cumulatively, each on the
// devices in `gpu_policy` order (HAMi's sort, redone per container).
// `on_chosen(const Choice&)` per chosen device, in annotation order.
//
// kVerdict answers only whether the pod fits and why not (Filter): the
// misfit, not which devices. It then skips HAMi's device sort wherever the
// choice cannot change the answer — every container but an app container
// followed by another GPU app container, without NUMA binding — because
// each device passes or fails a container's checks on its own: the
// container fits exactly when enough devices pass, and a misfit counts
// every device, in any order. `after` and the choices are then not the
// placement's.
enum class FitFor : uint8_t { kPlacement, kVerdict };
template <typename OnChosen>
FitResult FitPod(const NodeFacts& node, const PodRequest& pod, bool numa_bind,
                 GpuPolicy gpu_policy, FitFor fit_for, OnChosen&& on_chosen);

// How many devices failed a container for each reason (by Misfit value),
// and the reason a container that did not fit gets: the most frequent one
// (ties in a fixed order), kTooFewDevices when none failed but some passed.
using MisfitCounts = std::array<int, 10>;
Misfit MostFrequent(const MisfitCounts& counts, bool some_passed);

// The sums NodeScore reads: what the node's NVIDIA devices have and what is
// used of them.
struct NodeTotals {
  int64_t used = 0, used_cores = 0, used_memory = 0;
  int64_t count = 0, cores = 0, memory = 0;
};
int64_t ScoreOfTotals(const NodeTotals& totals, NodePolicy policy);

// HAMi's node score on the usage after placing the pod: 10 × (vGPUs used /
// split count + cores used / cores + memory used / memory) over the node's
// NVIDIA devices, mapped onto [0, 100] (binpack: fuller is higher; spread:
// emptier is higher).
int64_t NodeScore(const NodeFacts& node, const NodeUse& after, NodePolicy policy);

// The pod's node score on `node` (NodeScore of FitPod's placement), or
// nullopt where it does not fit. Where the devices chosen cannot change the
// totals NodeScore reads — no init container asks for vGPUs (the usage after
// is then the app containers' sum, not a per-device peak) and each vGPU takes
// the same memory on every device of the node (MiB, or a percentage of
// devices of one size) — it answers from kVerdict's fit and the totals,
// without HAMi's per-container device sort (Score's common case); else it
// places the pod. Allocation-free.
std::optional<int64_t> ScorePod(const NodeFacts& node, const PodRequest& pod, bool numa_bind,
                                GpuPolicy gpu_policy, NodePolicy node_policy);

// ---- implementation ----

// Fits one container request (HAMi's Fit); `order` is the persistent device
// order (positions), re-sorted here when `sort`. Fills chosen[0..nums) on
// success.
Misfit FitContainer(const NodeFacts& node, NodeUse& use, std::array<int, kMaxDevices>& order,
                    const ContainerRequest& request, bool numa_bind, GpuPolicy gpu_policy,
                    bool sort, std::array<Choice, kMaxDevices>& chosen);

template <typename OnChosen>
FitResult FitPod(const NodeFacts& node, const PodRequest& pod, bool numa_bind,
                 GpuPolicy gpu_policy, FitFor fit_for, OnChosen&& on_chosen) {
  FitResult result;
  const size_t size = static_cast<size_t>(node.size);
  std::array<int, kMaxDevices> base_order;
  for (size_t d = 0; d < size; ++d) {
    base_order[d] = static_cast<int>(d);
  }
  std::array<Choice, kMaxDevices> chosen;
  // Only [0, size) of these is read or written.
  NodeUse peak;
  NodeUse app;
  std::copy_n(node.use.begin(), size, peak.begin());
  std::copy_n(node.use.begin(), size, app.begin());
  const bool always_sort = fit_for == FitFor::kPlacement || numa_bind;
  const auto fit = [&](const ContainerRequest& request, size_t container, NodeUse& use,
                       std::array<int, kMaxDevices>& order, bool choice_read_later) {
    if (request.nums <= 0) {
      return Misfit::kNone;
    }
    const Misfit misfit = FitContainer(node, use, order, request, numa_bind, gpu_policy,
                                       always_sort || choice_read_later, chosen);
    if (misfit == Misfit::kNone) {
      for (int64_t i = 0; i < request.nums; ++i) {
        chosen[static_cast<size_t>(i)].container = container;
        on_chosen(chosen[static_cast<size_t>(i)]);
      }
    }
    return misfit;
  };
  size_t container = 0;
  for (const ContainerRequest& c : pod.init) {
    if (c.nums <= 0) {
      ++container;
      continue;
    }
    NodeUse scratch;
    std::copy_n(node.use.begin(), size, scratch.begin());
    std::array<int, kMaxDevices> order = base_order;
    result.misfit = fit(c, container++, scratch, order, false);
    if (result.misfit != Misfit::kNone) {
      return result;
    }
    for (size_t d = 0; d < size; ++d) {
      peak[d].used = std::max(peak[d].used, scratch[d].used);
      peak[d].memory = std::max(peak[d].memory, scratch[d].memory);
      peak[d].cores = std::max(peak[d].cores, scratch[d].cores);
    }
  }
  // The app containers place cumulatively: one's choice is read by the next
  // one that asks for vGPUs.
  size_t gpu_apps_left = 0;
  for (const ContainerRequest& c : pod.app) {
    gpu_apps_left += c.nums > 0 ? 1 : 0;
  }
  std::array<int, kMaxDevices> order = base_order;
  for (const ContainerRequest& c : pod.app) {
    gpu_apps_left -= c.nums > 0 ? 1 : 0;
    result.misfit = fit(c, container++, app, order, gpu_apps_left > 0);
    if (result.misfit != Misfit::kNone) {
      return result;
    }
  }
  for (size_t d = 0; d < size; ++d) {
    result.after[d].used = std::max(peak[d].used, app[d].used);
    result.after[d].memory = std::max(peak[d].memory, app[d].memory);
    result.after[d].cores = std::max(peak[d].cores, app[d].cores);
  }
  return result;
}

}  // namespace schedext::policy::hami

#endif  // SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_FIT_H_
