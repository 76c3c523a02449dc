// HamiVgpu's per-node state in the cluster cache: what the pods counted on a
// node use of each of its devices, by device UUID, read back from the
// allocation annotation HAMi's scheduler (or schedext's bind) wrote on them.
//
// Counting (NodeAccounting): a pod counts when it carries a non-empty
// hami.io/vgpu-devices-allocated; each device entry adds one vGPU, its
// memory and its cores to the UUID it names, whatever container it is in
// (as HAMi's own usage does). Reservations count the same way: Reserve adds
// the annotation to the pod the cache reserves. Bound pods that finish
// (Succeeded/Failed) or are deleted stop counting through the cache. An
// annotation that does not decode counts the entries before the bad one, the
// same on add and on remove.
//
// A pod stays counted for as long as the cache holds it bound, whatever its
// hami.io/bind-phase: HAMi's scheduler has no timeout on the allocating
// phase either (a pod whose allocation failed is failed by the kubelet, and
// then stops counting).
//
// Recorded (NodeStateCodec, as "HamiVgpu"): a node's state as
// {"devices":[{"uuid":"GPU-0","used":1,"memory":20000,"cores":30}]}, so that
// replay fits pods on the devices as the live request did.
//
// Thread-safety: the cache calls the hooks under its mutex (see
// policy/node_accounting.h); request threads read only the published states.
#ifndef SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_ACCOUNTING_H_
#define SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_ACCOUNTING_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "policy/builtin/hami_vgpu/fit.h"
#include "schedext/model/node_info.h"
#include "schedext/model/node_state.h"
#include "schedext/policy/node_accounting.h"
#include "schedext/policy/recorded_state.h"

namespace schedext::policy::hami {

struct UuidUse {
  std::string uuid;
  DeviceUse use{};
};

class VgpuNodeState final : public model::NodeState {
 public:
  std::vector<UuidUse> devices;  // no entry with everything zero
};

// The use counted on the node's devices, by the devices' order; a UUID the
// node does not register (a device that went away) is not seen.
// Allocation-free.
void UseOf(const VgpuNodeState* state, std::span<const Device> devices, NodeUse& out);

class VgpuAccounting final : public NodeAccounting, public NodeStateCodec {
 public:
  bool Counts(const model::PodInfo& pod) const override;
  std::shared_ptr<const model::NodeState> AddPod(std::string_view node,
                                                 std::shared_ptr<const model::NodeState> state,
                                                 const model::PodInfo& pod,
                                                 int sign) const override;

  // NodeStateCodec. A decoded state holds at most kMaxRecordedDevices
  // entries, each UUID at most kMaxRecordedUuid bytes.
  std::string_view StateName() const override { return "HamiVgpu"; }
  std::string EncodeState(const model::NodeState& state) const override;
  StatusOr<std::shared_ptr<const model::NodeState>> DecodeState(
      std::string_view json) const override;
};

// Bounds of a recorded state: the devices a node registers, with room for
// ones that went away while pods still counted on them.
inline constexpr size_t kMaxRecordedDevices = 4 * kMaxDevices;
inline constexpr size_t kMaxRecordedUuid = 256;

}  // namespace schedext::policy::hami

#endif  // SCHEDEXT_POLICY_BUILTIN_HAMI_VGPU_ACCOUNTING_H_
