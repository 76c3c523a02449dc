// GpuShare's per-node state in the cluster cache: the GPU memory of the pods
// on each device, and the devices the node's unhealthy ConfigMap lists.
//
// Counting (NodeAccounting): every pod that counts on a node and asks for GPU
// memory (GpuMemoryRequest > 0) adds its request to the device its index
// annotation names (GpuDeviceIndex), or to `unassigned` without one.
// Reservations count the same way: bind's Reserve adds the device
// annotations to the pod the cache reserves, so a reserved pod counts on its
// device at once, and the watch's object (annotated by then) replaces it.
// After a restart the per-device usage is rebuilt from the annotations of
// the bound pods.
//
// Unhealthy devices (WatchHandler of the ConfigMaps of
// convention.unhealthy_namespace): a ConfigMap named <unhealthy_prefix><node>
// sets the node's GpuUsage::unhealthy mask from its <unhealthy_key> (a node
// not known yet gets it when it appears; a deleted ConfigMap clears it);
// every other ConfigMap is ignored. The watch hands the ConfigMaps over raw;
// only the .data of those named so is decoded.
//
// Recorded (NodeStateCodec, as "GpuShare"): a node's GpuUsage as
// {"used": [6, 3], "pods": [1, 1], "unassigned": 0, "unhealthy": 2}, so that
// replay places requests on the devices as the live request did.
//
// Thread-safety: the cache calls every hook under its mutex, one at a time
// (policy/node_accounting.h); `unhealthy_` is touched only there. Request
// threads read only the published GpuNodeStates.
#ifndef SCHEDEXT_POLICY_BUILTIN_GPUSHARE_ACCOUNTING_H_
#define SCHEDEXT_POLICY_BUILTIN_GPUSHARE_ACCOUNTING_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "policy/builtin/gpushare/convention.h"
#include "schedext/model/node_info.h"
#include "schedext/model/node_state.h"
#include "schedext/policy/node_accounting.h"
#include "schedext/policy/recorded_state.h"
#include "schedext/wire/object_decoder.h"

namespace schedext::policy::gpushare {

// What the cache keeps for one node (in NodeUsage::states).
class GpuNodeState final : public model::NodeState {
 public:
  GpuUsage gpu;
};

// The node's GPU usage in the slot GpuShare registered: `empty` when nothing
// is counted there; nullptr when the node has no usage at all (schedext runs
// without its cluster cache). No allocation, no lock.
inline const GpuUsage* UsageOf(const model::NodeInfo& node, NodeStateSlot slot,
                               const GpuUsage& empty) {
  if (node.usage == nullptr) {
    return nullptr;
  }
  const auto* state = static_cast<const GpuNodeState*>(node.usage->states.Get(slot));
  return state != nullptr ? &state->gpu : &empty;
}

class GpuAccounting final : public NodeAccounting, public WatchHandler, public NodeStateCodec {
 public:
  explicit GpuAccounting(GpuShareConvention convention) : convention_(std::move(convention)) {}

  const GpuShareConvention& convention() const { return convention_; }

  // NodeAccounting
  bool Counts(const model::PodInfo& pod) const override;
  std::shared_ptr<const model::NodeState> AddPod(std::string_view node,
                                                 std::shared_ptr<const model::NodeState> state,
                                                 const model::PodInfo& pod,
                                                 int sign) const override;
  std::shared_ptr<const model::NodeState> Refresh(
      std::string_view node, std::shared_ptr<const model::NodeState> state) const override;

  // NodeStateCodec
  std::string_view StateName() const override { return "GpuShare"; }
  std::string EncodeState(const model::NodeState& state) const override;
  StatusOr<std::shared_ptr<const model::NodeState>> DecodeState(
      std::string_view json) const override;

  // WatchHandler
  void OnReplace(std::span<const wire::RawObject> objects, NodeRefresher& refresh) override;
  void OnUpsert(const wire::RawObject& object, NodeRefresher& refresh) override;
  void OnDelete(const wire::RawObject& object, NodeRefresher& refresh) override;

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Unhealthy {
    std::string_view node;  // into the ConfigMap
    uint64_t mask = 0;
  };

  uint64_t UnhealthyMask(std::string_view node) const;
  // What `config_map` says, or no node when it is not an unhealthy ConfigMap.
  Unhealthy Read(const wire::RawObject& config_map) const;
  // Records `mask` for `node` and has the cache refresh it when it changed.
  void SetUnhealthy(std::string_view node, uint64_t mask, NodeRefresher& refresh);

  const GpuShareConvention convention_;
  // Node name → unhealthy device mask (only non-zero masks); kept apart from
  // the node states so a ConfigMap may arrive before its node and survive
  // every rebuild of the node's entry. Under the cache's mutex.
  std::unordered_map<std::string, uint64_t, StringHash, std::equal_to<>> unhealthy_;
  // Read's decoder of ConfigMap .data and its output (reused). Under the
  // cache's mutex, as unhealthy_.
  mutable wire::ObjectDecoder decoder_;
  mutable std::vector<std::pair<std::string_view, std::string_view>> data_;
};

}  // namespace schedext::policy::gpushare

#endif  // SCHEDEXT_POLICY_BUILTIN_GPUSHARE_ACCOUNTING_H_
