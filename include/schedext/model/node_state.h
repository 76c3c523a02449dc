// NodeState: per-node state that a stateful policy keeps in the cluster
// cache's snapshots (GpuShare's GPU devices, for example), next to the
// resource usage every policy reads.
//
// The cache holds one slot per registered policy::NodeAccounting in each
// node's NodeUsage::states; the policy that registered it is the only one
// that knows the concrete type, and reads it in its per-node hooks with a
// static_cast (no lookup, no allocation, no lock: the snapshot is immutable).
//
// Thread-safety: a NodeState is immutable once published in a snapshot; many
// request threads read it at once.
#ifndef SCHEDEXT_MODEL_NODE_STATE_H_
#define SCHEDEXT_MODEL_NODE_STATE_H_

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace schedext::model {

// Opaque base of a policy's per-node state; the policy derives its own.
class NodeState {
 public:
  virtual ~NodeState() = default;
  NodeState(const NodeState&) = delete;
  NodeState& operator=(const NodeState&) = delete;

 protected:
  NodeState() = default;
};

// The states of one node, by slot (policy::NodeStateSlot). A null entry, or a
// slot past the end, means "nothing counted on this node".
class NodeStates {
 public:
  const NodeState* Get(size_t slot) const {
    return slot < states_.size() ? states_[slot].get() : nullptr;
  }
  // The owning pointer of slot `slot` (null when empty), for building the
  // next version of the state.
  std::shared_ptr<const NodeState> GetShared(size_t slot) const {
    return slot < states_.size() ? states_[slot] : nullptr;
  }
  // Sets slot `slot`, growing the table as needed; a null `state` clears it
  // (trailing empty slots are dropped, so equal contents compare equal).
  void Set(size_t slot, std::shared_ptr<const NodeState> state) {
    if (slot >= states_.size()) {
      if (state == nullptr) {
        return;
      }
      states_.resize(slot + 1);
    }
    states_[slot] = std::move(state);
    while (!states_.empty() && states_.back() == nullptr) {
      states_.pop_back();
    }
  }
  bool empty() const { return states_.empty(); }
  size_t size() const { return states_.size(); }

 private:
  std::vector<std::shared_ptr<const NodeState>> states_;
};

}  // namespace schedext::model

#endif  // SCHEDEXT_MODEL_NODE_STATE_H_
