// Snapshot: reading one published state of the cluster cache, without locks.
// See cache.h.
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "cluster/cache_index.h"
#include "schedext/cluster/cache.h"

namespace schedext::cluster {

using internal::NodeEntry;
using internal::PodEntry;

// ---- Snapshot ----

Snapshot::~Snapshot() = default;

const model::NodeInfo* Snapshot::FindNode(std::string_view name) const {
  const auto* entry = state_->nodes.Find(name);
  if (entry == nullptr || (*entry)->node == nullptr) {
    return nullptr;
  }
  return &(*entry)->info;
}

const model::PodInfo* Snapshot::FindPod(std::string_view uid) const {
  const auto* entry = state_->pods.Find(uid);
  return entry != nullptr ? &(*entry)->pod->info() : nullptr;
}

bool Snapshot::IsAssumed(std::string_view uid) const {
  const auto* entry = state_->pods.Find(uid);
  return entry != nullptr && (*entry)->assumed;
}

const model::NodeUsage* Snapshot::FindUsage(std::string_view name) const {
  const auto* entry = state_->nodes.Find(name);
  return entry != nullptr ? &(*entry)->usage : nullptr;
}

void Snapshot::ForEachNode(const std::function<void(const model::NodeInfo&)>& fn) const {
  state_->nodes.ForEach([&](const std::shared_ptr<const NodeEntry>& entry) {
    if (entry->node != nullptr) {
      fn(entry->info);
    }
  });
}

void Snapshot::ForEachPod(
    const std::function<void(const model::PodInfo& pod, bool assumed)>& fn) const {
  state_->pods.ForEach(
      [&](const std::shared_ptr<const PodEntry>& entry) { fn(entry->pod->info(), entry->assumed); });
}

size_t Snapshot::pod_count() const { return state_->pods.size(); }

Status ClusterCache::Resolve(std::span<const std::string_view> names,
                             std::vector<const model::NodeInfo*>& out,
                             std::shared_ptr<const Snapshot>& snap) const {
  snap = snapshot();
  if (!snap->synced()) {
    out.clear();
    return UnavailableError("node cache not synced");
  }
  out.resize(names.size());
  snap->state_->nodes.FindMany(names, [&](size_t i, const internal::NodeMap::Ptr* entry) {
    out[i] = entry != nullptr && (*entry)->known ? &(*entry)->info : nullptr;
  });
  return OkStatus();
}

}  // namespace schedext::cluster
