// ClusterCache: persistent tries under one mutex, published as snapshots.
// See cache.h for the contract; kube-scheduler's pkg/scheduler/internal/cache
// (AssumePod, FinishBinding, ForgetPod, AddPod confirming an assumed pod,
// cleanupAssumedPods) is the model for the reservation state machine. This
// file: the cache's calls (informer callbacks, watch feeds, reservations) and
// publication; the bookkeeping they apply is ClusterCache::Index
// (cache_index.h), the reading side Snapshot (snapshot.cc).
#include "schedext/cluster/cache.h"

#include <spdlog/spdlog.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "cluster/cache_index.h"

namespace schedext::cluster {
namespace {

using internal::Counts;
using internal::NodeEntry;
using internal::PodEntry;
using internal::PodName;
using internal::Clock;

}  // namespace

// ---- ClusterCache ----

// The InformerHandler of one extra watch: hands its lists and events to the
// watch's policy handler under the cache's mutex.
class ClusterCache::Feed final : public InformerHandler {
 public:
  Feed(ClusterCache& cache, size_t watch) : cache_(cache), watch_(watch) {}

  void OnReplace(ResourceKind /*kind*/, std::vector<InformerObject> objects) override {
    std::vector<wire::RawObject> views;
    views.reserve(objects.size());
    for (const InformerObject& object : objects) {
      if (object.object != nullptr) {
        views.push_back(object.object->view());
      }
    }
    cache_.ApplyWatch(
        watch_,
        [&](policy::WatchHandler& handler, policy::NodeRefresher& refresh) {
          handler.OnReplace(views, refresh);
        },
        /*replace=*/true);
  }
  void OnUpsert(ResourceKind /*kind*/, InformerObject object) override {
    if (object.object == nullptr) {
      return;
    }
    cache_.ApplyWatch(
        watch_,
        [&](policy::WatchHandler& handler, policy::NodeRefresher& refresh) {
          handler.OnUpsert(object.object->view(), refresh);
        },
        /*replace=*/false);
  }
  void OnDelete(ResourceKind /*kind*/, InformerObject object) override {
    if (object.object == nullptr) {
      return;
    }
    cache_.ApplyWatch(
        watch_,
        [&](policy::WatchHandler& handler, policy::NodeRefresher& refresh) {
          handler.OnDelete(object.object->view(), refresh);
        },
        /*replace=*/false);
  }

 private:
  ClusterCache& cache_;
  const size_t watch_;
};

namespace {

// NodeRefresher over the index, for one call of a WatchHandler under mu_.
template <typename Index>
class IndexRefresher final : public policy::NodeRefresher {
 public:
  explicit IndexRefresher(Index& index) : index_(index) {}
  void RefreshNode(std::string_view node) override { index_.RefreshNode(node); }

 private:
  Index& index_;
};

}  // namespace

ClusterCache::ClusterCache(CacheOptions options)
    : options_(std::move(options)), index_(std::make_unique<Index>(options_)) {
  for (size_t i = 0; i < options_.watches.size(); ++i) {
    feeds_.push_back(std::make_unique<Feed>(*this, i));
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto snapshot = std::shared_ptr<Snapshot>(new Snapshot());
  snapshot->state_ =
      std::make_shared<const internal::CacheState>(internal::CacheState{{}, {}, index_->interner});
  current_.store(std::move(snapshot));
}

ClusterCache::~ClusterCache() = default;

std::shared_ptr<const Snapshot> ClusterCache::snapshot() const { return current_.load(); }

void ClusterCache::Release(std::shared_ptr<const Snapshot>& snapshot) const {
  if (snapshot == nullptr) {
    return;
  }
  // use_count() is exact enough here: a superseded snapshot can gain no new
  // owner, so 1 means this is the last one. Anything else is an ordinary
  // reference drop.
  if (snapshot.use_count() == 1 && snapshot != current_.load()) {
    std::lock_guard<std::mutex> lock(released_mu_);
    released_.push_back(std::move(snapshot));
  }
  snapshot.reset();
}

void ClusterCache::DrainReleased() const {
  std::vector<std::shared_ptr<const Snapshot>> drained;
  {
    std::lock_guard<std::mutex> lock(released_mu_);
    drained.swap(released_);
  }
  // `drained` frees them here, outside every lock.
}

CacheStats ClusterCache::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  CacheStats stats;
  stats.nodes = index_->node_count;
  stats.pods = index_->pods.size();
  stats.assumed = index_->assumed.size();
  stats.generation = index_->generation;
  stats.nodes_synced = index_->nodes_synced;
  stats.pods_synced = index_->pods_synced;
  stats.watches_synced = index_->WatchesSynced();
  stats.last_update_copied_slots = index_->last_copied;
  return stats;
}

std::chrono::steady_clock::time_point ClusterCache::Now() const {
  return options_.now ? options_.now() : Clock::now();
}

void ClusterCache::BeginUpdateLocked() {
  index_->copied = 0;
  index_->Expire(Now());
}

void ClusterCache::PublishLocked() {
  Index& index = *index_;
  index.last_copied = index.copied;
  auto snapshot = std::shared_ptr<Snapshot>(new Snapshot());
  snapshot->state_ = std::make_shared<const internal::CacheState>(
      internal::CacheState{index.nodes, index.pods, index.interner});
  snapshot->node_count_ = index.node_count;
  snapshot->synced_ = index.Synced();
  snapshot->generation_ = ++index.generation;
  current_.store(std::move(snapshot));
}

void ClusterCache::OnReplace(ResourceKind kind, std::vector<InformerObject> objects) {
  DrainReleased();
  std::lock_guard<std::mutex> lock(mu_);
  BeginUpdateLocked();
  switch (kind) {
    case ResourceKind::kNodes:
      index_->ReplaceNodes(objects);
      break;
    case ResourceKind::kPods:
      index_->ReplacePods(objects);
      break;
    case ResourceKind::kObjects:
      break;  // only through WatchFeed
  }
  PublishLocked();
  spdlog::info("cluster cache: {} replaced: {} nodes, {} pods, {} reserved", ResourceKindName(kind),
               index_->node_count, index_->pods.size(), index_->assumed.size());
}

void ClusterCache::OnUpsert(ResourceKind kind, InformerObject object) {
  DrainReleased();
  std::lock_guard<std::mutex> lock(mu_);
  BeginUpdateLocked();
  switch (kind) {
    case ResourceKind::kNodes:
      if (object.node != nullptr) {
        index_->UpsertNode(std::move(object.node));
      }
      break;
    case ResourceKind::kPods:
      if (object.pod != nullptr) {
        index_->UpsertPod(std::move(object.pod));
      }
      break;
    case ResourceKind::kObjects:
      break;  // only through WatchFeed
  }
  PublishLocked();
}

void ClusterCache::OnDelete(ResourceKind kind, InformerObject object) {
  DrainReleased();
  std::lock_guard<std::mutex> lock(mu_);
  BeginUpdateLocked();
  switch (kind) {
    case ResourceKind::kNodes:
      if (object.node != nullptr) {
        index_->DeleteNode(object.node->name());
      }
      break;
    case ResourceKind::kPods:
      if (object.pod != nullptr) {
        index_->DeletePod(*object.pod);
      }
      break;
    case ResourceKind::kObjects:
      break;  // only through WatchFeed
  }
  PublishLocked();
}

InformerHandler& ClusterCache::WatchFeed(size_t watch) { return *feeds_.at(watch); }

void ClusterCache::ApplyWatch(
    size_t watch,
    const std::function<void(policy::WatchHandler& handler, policy::NodeRefresher& refresh)>&
        apply,
    bool replace) {
  DrainReleased();
  std::lock_guard<std::mutex> lock(mu_);
  BeginUpdateLocked();
  IndexRefresher<Index> refresh(*index_);
  apply(*options_.watches[watch], refresh);
  if (replace) {
    index_->watches_synced[watch] = true;
  }
  PublishLocked();
}

StatusOr<bool> ClusterCache::ReserveLocked(const AssumeRequest& request, const FitFn* fits,
                                           bool finished) {
  Index& index = *index_;
  const std::string uid(request.uid);
  if (uid.empty()) {
    return InvalidArgumentError("assume pod " + PodName(request) + ": empty uid");
  }
  if (auto it = index.assumed.find(uid); it != index.assumed.end()) {
    if (it->second.node != request.node) {
      return FailedPreconditionError("assume pod " + PodName(request) + " on " +
                                     std::string(request.node) + ": already reserved on " +
                                     it->second.node);
    }
    if (fits != nullptr && it->second.in_flight) {
      return FailedPreconditionError("assume pod " + PodName(request) + " on " +
                                     std::string(request.node) +
                                     ": a bind of this pod is already in progress");
    }
    if (finished) {
      // Assume(): a bind of this pod succeeded, so none is in flight now.
      it->second.in_flight = false;
      if (options_.assume_ttl.count() > 0) {
        it->second.deadline = Now() + options_.assume_ttl;
      }
    }
    return true;  // a retried bind: counted once
  }
  const auto* found = index.pods.Find(uid);
  const std::shared_ptr<const PodEntry> current = found != nullptr ? *found : nullptr;
  if (current != nullptr && Counts(*current)) {
    if (current->pod->info().node_name == request.node) {
      return true;  // the watch already shows it bound there
    }
    return FailedPreconditionError("assume pod " + PodName(request) + " on " +
                                   std::string(request.node) + ": bound to " +
                                   std::string(current->pod->info().node_name));
  }
  const model::PodInfo* source =
      request.pod != nullptr ? request.pod : (current != nullptr ? &current->pod->info() : nullptr);
  if (source == nullptr) {
    return NotFoundError("assume pod " + PodName(request) + ": pod " + uid +
                         " is unknown to the cluster cache and no requests were given");
  }
  model::PodInfo view = *source;  // shallow; OwnedPod copies the text below
  view.uid = request.uid;
  view.node_name = request.node;
  if (!request.pod_name.empty()) {
    view.name = request.pod_name;
  }
  if (!request.pod_namespace.empty()) {
    view.namespace_name = request.pod_namespace;
  }
  if (fits != nullptr) {
    const auto* node = index.nodes.Find(request.node);
    if (node == nullptr || (*node)->node == nullptr) {
      return NotFoundError("assume pod " + PodName(request) + ": node " +
                           std::string(request.node) + " is unknown to the cluster cache");
    }
    if (!(*fits)(view, (*node)->info)) {
      return false;
    }
  }
  Index::Assumption assumption;
  assumption.node.assign(request.node);
  if (finished && options_.assume_ttl.count() > 0) {
    assumption.deadline = Now() + options_.assume_ttl;
  }
  assumption.previous = current;
  assumption.in_flight = !finished;
  // `view` may carry annotations the FitFn added (views into the caller's
  // text); OwnedPod copies them, so the reservation counts on its device.
  index.SetPod(uid, Index::Entry(std::make_shared<const model::OwnedPod>(view), true));
  index.assumed.emplace(uid, std::move(assumption));
  return true;
}

StatusOr<bool> ClusterCache::AssumeIfFits(const AssumeRequest& request, const FitFn& fits) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!index_->Synced()) {
    return UnavailableError("node cache not synced");
  }
  BeginUpdateLocked();
  StatusOr<bool> reserved = ReserveLocked(request, &fits, /*finished=*/false);
  PublishLocked();
  return reserved;
}

Status ClusterCache::Assume(const AssumeRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  BeginUpdateLocked();
  StatusOr<bool> reserved = ReserveLocked(request, nullptr, /*finished=*/true);
  PublishLocked();
  return reserved.status();
}

Status ClusterCache::FinishBinding(std::string_view uid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_->assumed.find(uid);
  if (it == index_->assumed.end()) {
    return NotFoundError("finish binding: pod " + std::string(uid) + " is not reserved");
  }
  it->second.in_flight = false;
  if (options_.assume_ttl.count() > 0) {
    it->second.deadline = Now() + options_.assume_ttl;
  }
  return OkStatus();
}

Status ClusterCache::Forget(std::string_view uid) {
  std::lock_guard<std::mutex> lock(mu_);
  BeginUpdateLocked();
  const std::string key(uid);
  if (index_->assumed.find(key) == index_->assumed.end()) {
    PublishLocked();  // expiry may have changed something
    return NotFoundError("forget: pod " + key + " is not reserved");
  }
  index_->DropAssumption(key);
  PublishLocked();
  return OkStatus();
}

size_t ClusterCache::ExpireAssumed() {
  DrainReleased();
  std::lock_guard<std::mutex> lock(mu_);
  index_->copied = 0;
  const size_t expired = index_->Expire(Now());
  if (expired > 0) {
    PublishLocked();
  }
  return expired;
}

}  // namespace schedext::cluster
