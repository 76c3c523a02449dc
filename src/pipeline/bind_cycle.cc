// BindCycle: see bind_cycle.h. GPU sharing's device plugin relies on the pod
// never being bound without its annotations: they travel in the Binding, one
// write with spec.nodeName.
#include "schedext/pipeline/bind_cycle.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schedext/model/owned.h"

namespace schedext::pipeline {
BindCycle::BindCycle(BindCycleOptions options) : options_(std::move(options)) {}

Status BindCycle::Run(const Profile& profile, const BindTarget& t) const {
  std::string prefix = "bind ";
  prefix.append(t.pod_namespace).append("/").append(t.pod_name).append(" to ").append(t.node);
  if (options_.binder == nullptr) {
    return FailedPreconditionError(
        prefix +
        ": schedext has no Kubernetes API connection, so it cannot create the "
        "Binding; remove bindVerb from the scheduler's extender config");
  }
  if (std::chrono::steady_clock::now() > t.not_after) {
    // Waited in the bind queue past the caller's patience: kube-scheduler has
    // given up on this answer and will retry the pod, so binding now would
    // happen behind its back.
    return UnavailableError(prefix + ": " + std::string(kTooLate));
  }
  cluster::ClusterCache* const cache = options_.cache;

  // Step 1, assume + reserve, in one critical section of the cache.
  bool reserved = false;
  // What the profile's ReserveHooks want on the pod; the reserved pod's
  // annotation views point into these strings until AssumeIfFits returns.
  policy::PodAnnotations annotations;
  size_t hooks_reserved = 0;
  // The pod as reserved (requests, annotations), kept for Unreserve and the
  // pod-bound observers, which run after the cache's lock is released.
  std::shared_ptr<const model::OwnedPod> pod;
  std::string not_reserved;  // why there is no reservation, when there is none
  if (cache == nullptr) {
    not_reserved = "schedext has no cluster cache";
  } else if (t.pod_uid.empty()) {
    not_reserved = "the request has no PodUID";
  } else {
    std::optional<std::string> misfit;
    const cluster::AssumeRequest request{t.pod_uid, t.pod_namespace, t.pod_name, t.node, nullptr};
    StatusOr<bool> fits =
        cache->AssumeIfFits(request, [&](model::PodInfo& view, const model::NodeInfo& node) {
          misfit = profile.CheckFit(view, node);
          if (!misfit) {
            misfit = profile.Reserve(view, node, annotations, &hooks_reserved);
          }
          if (!misfit) {
            // The reservation must count where the annotations will say, so
            // that the next bind sees this device taken before the watch
            // delivers the patched pod.
            for (const auto& [key, value] : annotations) {
              view.annotations.Set(key, value);
            }
          }
          pod = std::make_shared<const model::OwnedPod>(view);
          return !misfit;
        });
    // (AssumeIfFits answers a retried bind of a pod already reserved or bound
    // there without calling the FitFn: then no hook reserved anything.)
    if (fits.ok() && !*fits) {
      if (pod != nullptr && hooks_reserved > 0) {
        profile.Unreserve(pod->info(), t.node, hooks_reserved);
      }
      return FailedPreconditionError(prefix + ": the node no longer fits the pod (" + *misfit +
                                     ")");
    }
    if (!fits.ok() && fits.status().code() == StatusCode::kFailedPrecondition) {
      return FailedPreconditionError(prefix + ": " + fits.status().message());
    }
    // kNotFound (the pod or node is not in the cache yet) or kUnavailable (not
    // synced): a profile without ReserveHooks binds anyway and the watch will
    // count the pod.
    reserved = fits.ok();
    if (!reserved) {
      not_reserved = fits.status().message();
    }
  }
  auto unreserve = [&] {
    if (pod != nullptr && hooks_reserved > 0) {
      profile.Unreserve(pod->info(), t.node, hooks_reserved);
    }
  };
  if (!reserved && profile.has_reservers()) {
    // Binding without the reservation would let concurrent binds share a
    // device and would leave the pod without the annotations its device
    // plugin needs; refusing makes the scheduler retry the pod later.
    return FailedPreconditionError(
        prefix + ": cannot reserve the pod in schedext's cache (" + not_reserved +
        "); the profile's policies must annotate the pod at bind, so it is not bound now (the "
        "scheduler retries it)");
  }

  // Step 2, the node locks the policies' device plugins expect, then bind,
  // with the annotations in the same write.
  const auto lock_request = [&](const policy::NodeLockSpec& lock) {
    return cluster::NodeLockRequest{lock.annotation, t.node, t.pod_namespace, t.pod_name,
                                    lock.expiry};
  };
  const auto unlock = [&](size_t taken) {
    for (size_t i = taken; i > 0; --i) {
      Status ignored = options_.binder->UnlockNode(lock_request(profile.node_locks()[i - 1]));
      (void)ignored;  // a lock left behind expires; the device plugin's next pod takes it over
    }
  };
  // A retried bind of a pod the cache already holds reserved or bound there
  // (AssumeIfFits called no hook): the first attempt took the locks, and the
  // device plugin may have released them after allocating; taking them again
  // would leave them to expire.
  const bool retried = reserved && pod == nullptr;
  for (size_t i = 0; !retried && i < profile.node_locks().size(); ++i) {
    const Status locked = options_.binder->LockNode(lock_request(profile.node_locks()[i]));
    if (!locked.ok()) {
      unlock(i);
      if (reserved) {
        Status ignored = cache->Forget(t.pod_uid);
        (void)ignored;
        unreserve();
      }
      return Status(locked.code(), prefix + ": " + locked.message());
    }
  }
  const Status bound = options_.binder->Bind(
      {t.pod_namespace, t.pod_name, t.pod_uid, t.node, annotations, t.not_after});

  // Step 3, confirm or forget.
  const bool may_exist = bound.ok() || bound.code() == StatusCode::kDeadlineExceeded;
  if (reserved) {
    if (may_exist) {
      // After a timeout the Binding may exist: keeping the reservation is
      // safe either way, as the watch confirms it or the
      // TTL releases it. FinishBinding's kNotFound only means the watch has
      // confirmed the pod already.
      Status ignored = cache->FinishBinding(t.pod_uid);
      (void)ignored;
    } else {
      Status ignored = cache->Forget(t.pod_uid);
      (void)ignored;
      unreserve();
    }
  }
  if (!may_exist && !retried) {
    unlock(profile.node_locks().size());
  }
  if (may_exist && options_.on_bound) {
    if (pod != nullptr) {
      options_.on_bound(pod->info(), t.node);
    } else {
      std::shared_ptr<const cluster::Snapshot> snapshot =
          cache != nullptr ? cache->snapshot() : nullptr;
      const model::PodInfo* known =
          snapshot != nullptr && !t.pod_uid.empty() ? snapshot->FindPod(t.pod_uid) : nullptr;
      model::PodInfo identity;
      if (known == nullptr) {
        identity.namespace_name = t.pod_namespace;
        identity.name = t.pod_name;
        identity.uid = t.pod_uid;
      }
      options_.on_bound(known != nullptr ? *known : identity, t.node);
    }
  }
  if (!bound.ok()) {
    return Status(bound.code(), prefix + ": " + bound.message());
  }
  return OkStatus();
}

}  // namespace schedext::pipeline
