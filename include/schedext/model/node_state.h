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
//
// The first kInlineSlots slots live in the object itself (in the node's
// NodeUsage): a per-node hook's Get reads the state's pointer from there
// instead of from a separate heap block per node. Later slots, which no
// built-in policy needs, go to a vector.
class NodeStates {
 public:
  static constexpr size_t kInlineSlots = 2;

  const NodeState* Get(size_t slot) const {
    if (slot < kInlineSlots) {
      return inline_[slot].get();
    }
    return slot - kInlineSlots < more_.size() ? more_[slot - kInlineSlots].get() : nullptr;
  }
  // The owning pointer of slot `slot` (null when empty), for building the
  // next version of the state.
  std::shared_ptr<const NodeState> GetShared(size_t slot) const {
    if (slot < kInlineSlots) {
      return inline_[slot];
    }
    return slot - kInlineSlots < more_.size() ? more_[slot - kInlineSlots] : nullptr;
  }
  // Sets slot `slot`; a null `state` clears it. size() stays one past the
  // last non-empty slot, so equal contents compare equal.
  void Set(size_t slot, std::shared_ptr<const NodeState> state) {
    if (slot < kInlineSlots) {
      inline_[slot] = std::move(state);
    } else {
      const size_t index = slot - kInlineSlots;
      if (index >= more_.size()) {
        if (state == nullptr) {
          return;
        }
        more_.resize(index + 1);
      }
      more_[index] = std::move(state);
      while (!more_.empty() && more_.back() == nullptr) {
        more_.pop_back();
      }
    }
    size_ = kInlineSlots + more_.size();
    while (size_ > 0 && Get(size_ - 1) == nullptr) {
      --size_;
    }
  }
  bool empty() const { return size_ == 0; }
  // One past the last non-empty slot.
  size_t size() const { return size_; }

 private:
  std::shared_ptr<const NodeState> inline_[kInlineSlots];
  std::vector<std::shared_ptr<const NodeState>> more_;  // slots kInlineSlots, ...
  size_t size_ = 0;
};

}  // namespace schedext::model

#endif  // SCHEDEXT_MODEL_NODE_STATE_H_
