// HamiVgpu's node summary (policy/node_summary.h): a node's NVIDIA devices
// and what is counted on them, written by the cluster cache into the
// NodeInfo's first cache lines whenever it stores the node (a node event,
// a pod counted or uncounted).
//
// Why: without it every request decodes every node's register annotation
// (about 100 bytes of text per device) and matches the counted usage to the
// devices by UUID — over a microsecond per node of 8 GPUs, 6 ms a request at
// 5,000 nodes. The summary is 144 bytes of numbers.
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
#include <string_view>

#include "policy/builtin/hami_vgpu/fit.h"
#include "schedext/model/node_info.h"
#include "schedext/policy/node_accounting.h"

namespace schedext::policy::hami {

// NVIDIA devices a summary holds; 8 per node is the common maximum.
inline constexpr int kSummaryDevices = 8;

struct VgpuSummaryDevice {
  int32_t memory = 0;
  int32_t used_memory = 0;
  int16_t cores = 0;
  int16_t used_cores = 0;
  uint8_t count = 0;
  uint8_t used = 0;
  int8_t numa = 0;
  uint8_t flags = 0;  // kHealthyFlag | kMigFlag
};
inline constexpr uint8_t kHealthyFlag = 1;
inline constexpr uint8_t kMigFlag = 2;

// All zero (what the cache's bytes hold before a summarizer writes them)
// reads as "not usable".
struct VgpuSummary {
  VgpuSummaryDevice devices[kSummaryDevices];
  // The devices are unusable from this Unix second on (a stale handshake
  // while the kubelet reports no count resource; protocol.h HandshakeStaleFrom).
  int64_t stale_from = std::numeric_limits<int64_t>::max();
  uint8_t size = 0;         // NVIDIA devices
  bool registered = false;  // the register annotation names at least one device
  bool usable = false;      // false: decode the node instead
};
static_assert(sizeof(VgpuSummary) == 144, "VgpuSummary grew: check the NodeInfo lines it spans");

// The summary of `node` with the usage counted in its state at `slot`;
// `count_resource` is the profile's vGPU count resource (the handshake rule).
VgpuSummary Summarize(const model::NodeInfo& node, NodeStateSlot slot,
                      std::string_view count_resource);

// The facts of a usable, registered summary (for a pod without device rules).
void FactsOf(const VgpuSummary& summary, NodeFacts& out);

}  // namespace schedext::policy::hami

#endif  // SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_SUMMARY_H_
