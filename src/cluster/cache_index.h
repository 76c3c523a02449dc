// The cluster cache's mutable bookkeeping, shared by its source files: the
// persistent node table and pod trie entries (internal::NodeEntry, PodEntry,
// CacheState, which Snapshots share) and ClusterCache::Index, which applies
// the informers' lists and events and the reservations to them — pods
// counted on nodes, the policies' accountings and summaries — under the
// cache's mutex. See cache.h for the contract.
//
// Internal to the cluster layer (src/, not include/): cache.cc (the cache's
// calls, feeds and reservations) and snapshot.cc (reading) include it.
#ifndef SCHEDEXT_SRC_CLUSTER_CACHE_INDEX_H_
#define SCHEDEXT_SRC_CLUSTER_CACHE_INDEX_H_

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cluster/flat_persistent_map.h"
#include "cluster/persistent_map.h"
#include "schedext/cluster/cache.h"

namespace schedext::cluster {
namespace internal {

// Heterogeneous lookup by std::string_view (C++20, libstdc++ 12).
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Resource names of NodeUsage scalars must outlive the pods that brought them:
// they are interned here, never removed (a cluster has a handful of them).
// Mutated under the cache's mu_ only; snapshots read only the text of existing
// elements, which never moves (node-based set).
class Interner {
 public:
  std::string_view Intern(std::string_view text) {
    auto it = strings_.find(text);
    if (it == strings_.end()) {
      it = strings_.emplace(text).first;
    }
    return *it;
  }

 private:
  std::unordered_set<std::string, StringHash, std::equal_to<>> strings_;
};

struct NodeEntry {
  explicit NodeEntry(std::string_view node_name) {
    if (node_name.size() <= sizeof(short_name)) {
      std::memcpy(short_name, node_name.data(), node_name.size());
      name = std::string_view(short_name, node_name.size());
    } else {
      long_name.assign(node_name);
      name = long_name;
    }
  }
  NodeEntry(const NodeEntry&) = delete;  // info.usage points at this->usage; name at short_name
  NodeEntry& operator=(const NodeEntry&) = delete;

  // The key. A request looks up thousands of names: stored in the entry's
  // first bytes (as nearly all node names fit), the key compare reads the
  // cache line the lookup loads anyway instead of one more heap block.
  std::string_view name;
  char short_name[47];
  // `node` is set: Resolve's check, on the key's line.
  bool known = false;
  // node->info() with usage = &usage and the policies' summaries (when node
  // is set). Right after the key: the lines a request reads of a node, its
  // first ones, follow the line the key compare loaded.
  model::NodeInfo info;
  std::shared_ptr<const model::OwnedNode> node;  // null: only pods name it so far
  std::string long_name;                         // names longer than short_name
  model::NodeUsage usage;
};
struct NodeKeyOf {
  std::string_view operator()(const NodeEntry& e) const { return e.name; }
};

struct PodEntry {
  std::shared_ptr<const model::OwnedPod> pod;  // node_name: where it counts ("" pending)
  bool assumed = false;
};
struct PodKeyOf {
  std::string_view operator()(const PodEntry& e) const { return e.pod->uid(); }
};

using NodeMap = FlatPersistentMap<NodeEntry, NodeKeyOf>;
using PodMap = PersistentMap<PodEntry, PodKeyOf>;

struct CacheState {
  NodeMap nodes;
  PodMap pods;
  std::shared_ptr<const Interner> interner;  // keeps usage resource names alive
};

using Clock = std::chrono::steady_clock;

// A pod counts against a node once it names one (bound or reserved).
inline bool Counts(const PodEntry& entry) { return !entry.pod->info().node_name.empty(); }

// "<namespace>/<name>", for messages.
inline std::string PodName(const AssumeRequest& request) {
  return std::string(request.pod_namespace) + "/" + std::string(request.pod_name);
}

}  // namespace internal

struct ClusterCache::Index {
  explicit Index(const CacheOptions& options)
      : accountings(options.accountings),
        summaries(options.summaries),
        names(options.names.get()),
        watches_synced(options.watches.size(), false) {}

  internal::NodeMap nodes;
  internal::PodMap pods;
  std::shared_ptr<internal::Interner> interner = std::make_shared<internal::Interner>();
  // The cache's options_.accountings (which outlive the index), by slot.
  const std::vector<std::shared_ptr<const policy::NodeAccounting>>& accountings;
  // The cache's options_.summaries, likewise.
  const std::vector<policy::NodeSummaryRegistration>& summaries;
  // The options' frozen name table (which outlives the index), or null.
  const model::NameTable* names;

  struct Assumption {
    std::string node;
    std::optional<internal::Clock::time_point> deadline;  // nullopt: bind in flight, or no TTL
    // The pending pod's entry before the reservation, restored by Forget /
    // expiry (kept current when pending updates arrive meanwhile).
    std::shared_ptr<const internal::PodEntry> previous;
    // Reserved by AssumeIfFits and neither FinishBinding nor Forget yet: a
    // bind is writing the pod now, and a second one must not race it.
    bool in_flight = false;
  };
  std::unordered_map<std::string, Assumption, internal::StringHash, std::equal_to<>> assumed;

  size_t node_count = 0;  // entries with a node object
  bool nodes_synced = false;
  bool pods_synced = false;
  std::vector<bool> watches_synced;  // per CacheOptions::watches entry
  uint64_t generation = 0;
  size_t copied = 0;  // trie slots copied by the update in progress
  size_t last_copied = 0;

  // Tags what the policies look up on every node with its ids in `names`.
  void AssignIds(model::NodeInfo& info) const {
    if (names == nullptr) {
      return;
    }
    info.labels.AssignIds(*names);
    info.annotations.AssignIds(*names);
    info.capacity.AssignIds(*names);
    info.allocatable.AssignIds(*names);
  }

  // usage += sign × the pod's requests.
  void AddUsage(model::NodeUsage& usage, const model::PodInfo& pod, int64_t sign) {
    pod.requests.ForEach([&](std::string_view name, int64_t amount) {
      usage.requested.Add(interner->Intern(name), sign * amount);
    });
    pod.scoring_requests.ForEach([&](std::string_view name, int64_t amount) {
      usage.scoring_requested.Add(interner->Intern(name), sign * amount);
    });
    usage.pods += sign;
    if (names != nullptr && usage.requested.ids_from() != names) {
      // A new usage: tagged once; the scalars added later are tagged as added.
      usage.requested.AssignIds(*names);
      usage.scoring_requested.AssignIds(*names);
    }
    if (sign < 0) {
      usage.requested.RemoveZeroScalars();
      usage.scoring_requested.RemoveZeroScalars();
    }
    for (size_t slot = 0; slot < accountings.size(); ++slot) {
      const policy::NodeAccounting& accounting = *accountings[slot];
      if (accounting.Counts(pod)) {
        usage.states.Set(slot, accounting.AddPod(pod.node_name, usage.states.GetShared(slot), pod,
                                                 static_cast<int>(sign)));
      }
    }
  }

  // Every entry is built here, so each carries what the policies' watched
  // objects currently say about its node, whatever rebuilt it.
  std::shared_ptr<const internal::NodeEntry> MakeNode(std::string_view name,
                                            std::shared_ptr<const model::OwnedNode> node,
                                            const model::NodeUsage& usage) const {
    auto entry = std::make_shared<internal::NodeEntry>(name);
    entry->usage = usage;
    for (size_t slot = 0; slot < accountings.size(); ++slot) {
      entry->usage.states.Set(slot,
                              accountings[slot]->Refresh(name, entry->usage.states.GetShared(slot)));
    }
    if (node != nullptr) {
      // The current entry of the same node object has its ids assigned
      // already: copying it saves looking up every label and resource name
      // again on each pod event.
      const auto* current = nodes.Find(name);
      if (current != nullptr && (*current)->node == node) {
        entry->info = (*current)->info;
      } else {
        entry->info = node->info();
        AssignIds(entry->info);
      }
      entry->info.usage = &entry->usage;
      policy::WriteNodeSummaries(summaries, entry->info);
    }
    entry->known = node != nullptr;
    entry->node = std::move(node);
    return entry;
  }

  // Adds sign × pod to the usage of `node_name` (creating a usage-only entry
  // for a node not known yet, dropping it when its last pod leaves).
  void ChangeUsage(std::string_view node_name, const model::PodInfo& pod, int64_t sign) {
    const auto* current = nodes.Find(node_name);
    model::NodeUsage usage = current != nullptr ? (*current)->usage : model::NodeUsage{};
    std::shared_ptr<const model::OwnedNode> node = current != nullptr ? (*current)->node : nullptr;
    AddUsage(usage, pod, sign);
    if (node == nullptr && usage.pods <= 0) {
      nodes = nodes.Erase(node_name, &copied);
    } else {
      nodes = nodes.Set(MakeNode(node_name, std::move(node), usage), &copied);
    }
  }

  // Makes `next` (or nothing) the entry of `uid`, moving its usage.
  void SetPod(const std::string& uid, std::shared_ptr<const internal::PodEntry> next) {
    const auto* found = pods.Find(uid);
    const std::shared_ptr<const internal::PodEntry> old = found != nullptr ? *found : nullptr;
    if (old != nullptr && internal::Counts(*old)) {
      ChangeUsage(old->pod->info().node_name, old->pod->info(), -1);
    }
    if (next != nullptr && internal::Counts(*next)) {
      ChangeUsage(next->pod->info().node_name, next->pod->info(), +1);
    }
    pods = next != nullptr ? pods.Set(std::move(next), &copied) : pods.Erase(uid, &copied);
  }

  static std::shared_ptr<const internal::PodEntry> Entry(std::shared_ptr<const model::OwnedPod> pod,
                                               bool assumed) {
    return std::make_shared<const internal::PodEntry>(internal::PodEntry{std::move(pod), assumed});
  }

  // Drops one reservation, restoring the pending pod it replaced.
  void DropAssumption(const std::string& uid) {
    auto it = assumed.find(uid);
    if (it == assumed.end()) {
      return;
    }
    std::shared_ptr<const internal::PodEntry> previous = std::move(it->second.previous);
    assumed.erase(it);
    SetPod(uid, std::move(previous));
  }

  size_t Expire(internal::Clock::time_point now) {
    std::vector<std::string> expired;
    for (const auto& [uid, assumption] : assumed) {
      if (assumption.deadline.has_value() && *assumption.deadline <= now) {
        expired.push_back(uid);
      }
    }
    for (const std::string& uid : expired) {
      spdlog::warn(
          "cluster cache: reservation of pod {} on {} expired before the watch "
          "confirmed it",
          uid, assumed.find(uid)->second.node);
      DropAssumption(uid);
    }
    return expired.size();
  }

  void UpsertPod(std::shared_ptr<const model::OwnedPod> pod) {
    const std::string uid(pod->uid());
    if (uid.empty()) {
      return;  // not a real pod object
    }
    const bool bound = !pod->info().node_name.empty();
    auto it = assumed.find(uid);
    if (it != assumed.end()) {
      if (pod->terminal() || bound) {
        // Confirmed (on whichever node the API says) or finished: the API's
        // object replaces the reservation, so it never counts twice.
        assumed.erase(it);
        SetPod(uid, pod->terminal() ? nullptr : Entry(std::move(pod), false));
        return;
      }
      // Still pending: the watch lags the bind. Keep the reservation.
      it->second.previous = Entry(std::move(pod), false);
      return;
    }
    SetPod(uid, pod->terminal() ? nullptr : Entry(std::move(pod), false));
  }

  void DeletePod(const model::OwnedPod& pod) {
    const std::string uid(pod.uid());
    assumed.erase(uid);
    SetPod(uid, nullptr);
  }

  void UpsertNode(std::shared_ptr<const model::OwnedNode> node) {
    const std::string_view name = node->name();
    const auto* current = nodes.Find(name);
    if (current == nullptr || (*current)->node == nullptr) {
      ++node_count;
    }
    const model::NodeUsage usage = current != nullptr ? (*current)->usage : model::NodeUsage{};
    nodes = nodes.Set(MakeNode(name, std::move(node), usage), &copied);
  }

  void DeleteNode(std::string_view name) {
    const auto* current = nodes.Find(name);
    if (current == nullptr || (*current)->node == nullptr) {
      return;
    }
    --node_count;
    const std::shared_ptr<const internal::NodeEntry> old = *current;
    if (old->usage.pods > 0) {
      // Its pods still count (kube-scheduler keeps such a NodeInfo too) until
      // their own deletions arrive.
      nodes = nodes.Set(MakeNode(old->name, nullptr, old->usage), &copied);
    } else {
      nodes = nodes.Erase(old->name, &copied);
    }
  }

  void ReplaceNodes(std::vector<InformerObject>& objects) {
    internal::NodeMap fresh;
    size_t count = 0;
    for (InformerObject& object : objects) {
      if (object.node == nullptr) {
        continue;
      }
      const std::string_view name = object.node->name();
      const auto* current = nodes.Find(name);
      const model::NodeUsage usage = current != nullptr ? (*current)->usage : model::NodeUsage{};
      if (fresh.Find(name) == nullptr) {
        ++count;
      }
      fresh = fresh.Set(MakeNode(name, std::move(object.node), usage));
    }
    // Nodes that disappeared keep only the usage of pods still naming them.
    nodes.ForEach([&](const std::shared_ptr<const internal::NodeEntry>& entry) {
      if (fresh.Find(entry->name) == nullptr && entry->usage.pods > 0) {
        fresh = fresh.Set(MakeNode(entry->name, nullptr, entry->usage));
      }
    });
    nodes = std::move(fresh);
    node_count = count;
    nodes_synced = true;
  }

  void ReplacePods(std::vector<InformerObject>& objects) {
    internal::PodMap fresh;
    std::unordered_map<std::string, model::NodeUsage, internal::StringHash, std::equal_to<>> usage;
    auto count = [&](const model::PodInfo& pod) {
      auto it = usage.find(pod.node_name);
      if (it == usage.end()) {
        it = usage.emplace(std::string(pod.node_name), model::NodeUsage{}).first;
      }
      AddUsage(it->second, pod, +1);
    };
    for (InformerObject& object : objects) {
      if (object.pod == nullptr || object.pod->uid().empty()) {
        continue;
      }
      const std::string uid(object.pod->uid());
      const bool bound = !object.pod->info().node_name.empty();
      auto it = assumed.find(uid);
      if (it != assumed.end()) {
        if (!object.pod->terminal() && !bound) {
          it->second.previous = Entry(std::move(object.pod), false);
          continue;  // the reservation stands; added below
        }
        assumed.erase(it);  // confirmed or finished
      }
      if (object.pod->terminal()) {
        continue;
      }
      if (bound) {
        count(object.pod->info());
      }
      fresh = fresh.Set(Entry(std::move(object.pod), false));
    }
    for (const auto& [uid, assumption] : assumed) {
      const auto* entry = pods.Find(uid);
      if (entry != nullptr) {
        count((*entry)->pod->info());
        fresh = fresh.Set(*entry);
      }
    }
    // Rebuild the node entries with the recomputed usage.
    internal::NodeMap rebuilt;
    nodes.ForEach([&](const std::shared_ptr<const internal::NodeEntry>& entry) {
      if (entry->node == nullptr) {
        return;
      }
      auto it = usage.find(entry->name);
      rebuilt = rebuilt.Set(
          MakeNode(entry->name, entry->node, it != usage.end() ? it->second : model::NodeUsage{}));
    });
    for (const auto& [name, node_usage] : usage) {
      if (rebuilt.Find(name) == nullptr) {
        rebuilt = rebuilt.Set(MakeNode(name, nullptr, node_usage));
      }
    }
    nodes = std::move(rebuilt);
    pods = std::move(fresh);
    pods_synced = true;
  }

  bool WatchesSynced() const {
    for (bool synced : watches_synced) {
      if (!synced) {
        return false;
      }
    }
    return true;
  }

  bool Synced() const { return nodes_synced && pods_synced && WatchesSynced(); }

  // Rebuilds the entry of `node_name` (when there is one), so that its
  // states are Refresh()ed.
  void RefreshNode(std::string_view node_name) {
    if (const auto* current = nodes.Find(node_name)) {
      const std::shared_ptr<const internal::NodeEntry> old_entry = *current;
      nodes = nodes.Set(MakeNode(node_name, old_entry->node, old_entry->usage), &copied);
    }
  }

};

}  // namespace schedext::cluster

#endif  // SCHEDEXT_SRC_CLUSTER_CACHE_INDEX_H_
