// GpuShare's node summary (policy/node_summary.h): what Filter and Score
// read of a node — its device shape, each device's free memory and its
// unhealthy devices — written by the cluster cache into the NodeInfo's first
// cache lines whenever it stores the node (every pod counted or uncounted,
// every unhealthy-ConfigMap refresh, every node event).
//
// Why: without it each node costs a chain of dependent misses — the
// NodeInfo's usage pointer, the NodeUsage's state slots, the GpuNodeState,
// and apart from them the capacity's scalar block — at a few hundred ns each
// once 5,000 nodes' blocks are out of the L2. The summary is 48 bytes next to
// the node's name.
//
// Only common nodes fit: up to kSummaryDevices devices of at most INT32_MAX
// memory each, and no negative used amounts (inconsistent counts). For any
// other node the summary says so (usable false) and the policy reads the
// node as before; both answer through PlaceBestFit (convention.h) and the
// same scoring code, so the answers are the same either way.
//
// Thread-safety: plain values; GpuNodeReader is immutable.
#ifndef SCHEDEXT_POLICY_BUILTIN_GPUSHARE_SUMMARY_H_
#define SCHEDEXT_POLICY_BUILTIN_GPUSHARE_SUMMARY_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "policy/builtin/gpushare/accounting.h"
#include "policy/builtin/gpushare/convention.h"
#include "schedext/model/name_table.h"
#include "schedext/model/node_info.h"
#include "schedext/policy/node_accounting.h"

namespace schedext::policy::gpushare {

// Devices a summary holds; 8 per node is the common maximum.
inline constexpr int kSummaryDevices = 8;

// All zero (what the cache's bytes hold before a summarizer writes them)
// reads as "not usable".
struct GpuSummary {
  int64_t device_memory = 0;  // GpuShape::device_memory
  // Per device below `count`: device_memory − used, floored at 0.
  int32_t free[kSummaryDevices] = {};
  uint8_t count = 0;      // GpuShape::count, at most kSummaryDevices
  uint8_t unhealthy = 0;  // bit d: device d (< count) is unhealthy
  // False: the node is not summarized here (too many or too large devices,
  // negative counts); read NodeGpuShape and the GpuUsage instead.
  bool usable = false;
};
// 48 bytes: with the NodeInfo's head, within its first two cache lines.
static_assert(sizeof(GpuSummary) == 48, "GpuSummary grew: check the NodeInfo lines it spans");

// A usable summary's devices, for PlaceBestFit and the scores.
class SummaryDevices {
 public:
  explicit SummaryDevices(const GpuSummary& summary) : summary_(summary) {}

  int count() const { return summary_.count; }
  int64_t device_memory() const { return summary_.device_memory; }
  bool healthy(int device) const { return ((summary_.unhealthy >> device) & 1U) == 0; }
  int64_t free(int device) const { return summary_.free[device]; }

 private:
  const GpuSummary& summary_;
};

// What the summarizer needs of the policy, shared by the policy and the
// summarizer (which the cache may hold longer than the policy).
class GpuNodeReader {
 public:
  // `table` may be null (lookups by text).
  GpuNodeReader(const GpuShareConvention& convention, NodeStateSlot slot,
                model::NameTable* table)
      : count_resource_(convention.count_resource),
        memory_resource_(convention.memory_resource),
        names_{model::InternedName::Of(count_resource_, table),
               model::InternedName::Of(memory_resource_, table)},
        slot_(slot) {}
  GpuNodeReader(const GpuNodeReader&) = delete;  // names_ views this object's strings
  GpuNodeReader& operator=(const GpuNodeReader&) = delete;

  // The node's devices from its capacity (NodeGpuShape).
  GpuShape Shape(const model::NodeInfo& node) const { return NodeGpuShape(node, names_); }
  // The node's GpuUsage: an empty one when nothing is counted there, null
  // when the node has no usage (UsageOf).
  const GpuUsage* Usage(const model::NodeInfo& node) const {
    return UsageOf(node, slot_, nothing_);
  }

  // A pure function of the node, its capacity and its usage's GPU state.
  GpuSummary Summarize(const model::NodeInfo& node) const {
    const GpuShape shape = Shape(node);
    if (shape.count > kSummaryDevices ||
        shape.device_memory > std::numeric_limits<int32_t>::max()) {
      return {};
    }
    const GpuUsage* usage = Usage(node);
    GpuSummary summary;
    for (int device = 0; device < shape.count; ++device) {
      const int64_t used = usage != nullptr ? usage->UsedOn(device) : 0;
      if (used < 0) {
        return {};
      }
      // In [0, device_memory], which fits in 32 bits.
      summary.free[device] =
          static_cast<int32_t>(std::max<int64_t>(0, shape.device_memory - used));
      if (usage != nullptr && usage->Unhealthy(device)) {
        summary.unhealthy |= static_cast<uint8_t>(1U << device);
      }
    }
    summary.device_memory = shape.device_memory;
    summary.count = static_cast<uint8_t>(shape.count);
    summary.usable = true;
    return summary;
  }

 private:
  const std::string count_resource_;
  const std::string memory_resource_;
  const GpuResourceNames names_;  // views the two strings above
  const NodeStateSlot slot_;
  const GpuUsage nothing_;  // what Usage answers for a node nothing is counted on
};

}  // namespace schedext::policy::gpushare

#endif  // SCHEDEXT_POLICY_BUILTIN_GPUSHARE_SUMMARY_H_
