// HamiVgpu's node summary (policy/node_summary.h): a node's NVIDIA devices
// and what is counted on them, written by the cluster cache into the
// NodeInfo's first cache lines whenever it stores the node (a node event,
// a pod counted or uncounted).
//
// Why: without it every request decodes every node's register annotation
// (about 100 bytes of text per device) and matches the counted usage to the
// devices by UUID — over a microsecond per node of 8 GPUs, 6 ms a request at
// 5,000 nodes. The summary is 120 bytes of numbers.
//
// It holds no names, so it serves pods without type, UUID or mode rules
// (PodRules::NamesDevices() false), and only common nodes: up to
// kSummaryDevices NVIDIA devices whose numbers fit its fields. For any other
// node or pod the policy decodes the node as before. Both paths build the
// same NodeFacts (fit.h) and decide through FitPod and NodeScore.
//
// Thread-safety: plain values and pure functions.
#ifndef SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_SUMMARY_H_
#define SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_SUMMARY_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

#include "policy/builtin/hami_vgpu/fit.h"
#include "schedext/model/node_info.h"
#include "schedext/policy/node_accounting.h"

namespace schedext::policy::hami {

// NVIDIA devices a summary holds; 8 per node is the common maximum.
inline constexpr int kSummaryDevices = 8;

// By device, in NodeFacts order. Narrow fields, arrays per field: 120 bytes,
// so that the summary fits the node's summary bytes beside other policies'
// (NodeResourcesFit's and GpuShare's together leave 136).
struct VgpuSummary {
  int32_t memory[kSummaryDevices];  // MiB
  int32_t used_memory[kSummaryDevices];
  uint8_t cores[kSummaryDevices];
  uint8_t used_cores[kSummaryDevices];
  uint8_t count[kSummaryDevices];  // split count
  uint8_t used[kSummaryDevices];   // vGPUs
  int8_t numa[kSummaryDevices];
  uint8_t healthy = 0;  // bit d: device d is healthy
  uint8_t mig = 0;      // bit d: device d runs in MIG mode
  uint8_t size = 0;     // NVIDIA devices
  // All zero (what the cache's bytes hold before a summarizer writes them)
  // reads as not usable.
  bool usable = false;  // false: decode the node instead
  bool registered = false;  // the register annotation names at least one device
  // The devices are unusable from this Unix second on (a stale handshake
  // while the kubelet reports no count resource; protocol.h HandshakeStaleFrom).
  int64_t stale_from = std::numeric_limits<int64_t>::max();
};
static_assert(sizeof(VgpuSummary) == 120, "VgpuSummary grew: check that it still fits");

// The summary of `node` with the usage counted in its state at `slot`;
// `count_resource` is the profile's vGPU count resource (the handshake rule).
VgpuSummary Summarize(const model::NodeInfo& node, NodeStateSlot slot,
                      std::string_view count_resource);

// The facts of a usable, registered summary (for a pod without device rules).
void FactsOf(const VgpuSummary& summary, NodeFacts& out);

// The common pod, decided on the summary itself: one container asks for
// vGPUs, no init container does, no NUMA binding, no device rules. FitPod
// then places one container, where each device passes or fails on its own
// and the device order cannot change the verdict, and the score's totals do
// not depend on the devices chosen when each vGPU takes the same memory on
// all of them. These answer what FitPod/ScorePod answer on FactsOf(summary)
// (HamiSummaryTest checks it) without building the facts: Filter and Score
// run them for every node, so that building is most of their cost.
Misfit FitOne(const VgpuSummary& summary, const ContainerRequest& request);
// The node score with the pod placed, or nullopt where it does not fit; also
// nullopt with `placement_needed` set where a percentage request meets
// devices of different sizes (then ScorePod on the facts answers).
std::optional<int64_t> ScoreOne(const VgpuSummary& summary, const ContainerRequest& request,
                                NodePolicy policy, bool& placement_needed);

}  // namespace schedext::policy::hami

#endif  // SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_SUMMARY_H_
