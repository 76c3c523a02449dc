// RequestState: per-request scratch shared by the hooks of one request, so a
// PreFilter/PreScore can compute something once and the per-node calls read it.
//
// Thread-safety: written only by the Pre* hooks, before the per-node loop; read
// concurrently (const) during the loop.
#ifndef SCHEDEXT_POLICY_REQUEST_STATE_H_
#define SCHEDEXT_POLICY_REQUEST_STATE_H_

#include <memory>
#include <utility>
#include <vector>

namespace schedext::policy {

// Base of whatever a hook stores in RequestState.
class StateData {
 public:
  virtual ~StateData() = default;
};

class RequestState {
 public:
  // Stores `data` under `owner` (normally the hook's `this`), replacing any
  // previous value.
  void Set(const void* owner, std::unique_ptr<StateData> data);
  // What `owner` stored, or nullptr. Inline: per-node hooks call it for
  // every node, and a request holds a handful of slots.
  const StateData* Get(const void* owner) const {
    for (const auto& slot : slots_) {
      if (slot.first == owner) {
        return slot.second.get();
      }
    }
    return nullptr;
  }
  // Get() cast to the type the owner stored.
  template <typename T>
  const T* GetAs(const void* owner) const {
    return static_cast<const T*>(Get(owner));
  }
  void Clear() { slots_.clear(); }

 private:
  std::vector<std::pair<const void*, std::unique_ptr<StateData>>> slots_;
};

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_REQUEST_STATE_H_
