// BindCycle: the transaction behind the bind verb, outside the HTTP service
// (the scheduling framework's Reserve → Permit → Bind → PostBind, as an
// extender can have it):
//
//   1. assume + reserve: in ONE critical section of the cluster cache
//      (ClusterCache::AssumeIfFits), re-check the node with the profile's
//      resource filters (Profile::CheckFit) and run its ReserveHooks on the
//      latest node view; the pod is then counted on the node — with the
//      annotations the hooks asked for, so per-node policy state
//      (NodeAccounting) counts it where the annotations will say — and two
//      binds in flight cannot both take the last room;
//   2. bind: with no lock of schedext's held, first take the node locks the
//      ReserveHooks ask for (ReserveHook::NodeLock, PodBinder::LockNode: a
//      device plugin's mutex annotation on the Node, HAMi's) — a lock held
//      by another pod fails the bind here, having written nothing else, and
//      the scheduler retries the pod; then create the Binding (PodBinder),
//      carrying the hooks' annotations in its metadata: kube-apiserver sets
//      them on the pod in the same write as spec.nodeName, so the pod is
//      never bound without them and never keeps them unbound. The device
//      plugin releases the locks once it has allocated the pod;
//   3. confirm (ClusterCache::FinishBinding, the reservation's TTL starts;
//      the watch then replaces it with the API's object) and tell the
//      pod-bound observers — or forget: drop the reservation, release the
//      node locks and Unreserve the hooks.
//
// Outcomes, as ExtenderService answers them (each an Error of a 200 reply,
// prefixed "bind <ns>/<name> to <node>: "):
//   no binder                      "schedext has no Kubernetes API connection..."
//   node no longer fits / refused  "the node no longer fits the pod (<why>)"
//   pod bound/reserved elsewhere,  the cache's kFailedPrecondition message
//   or a bind already in flight
//   no reservation possible (no cache, no uid, pod or node not in the cache,
//   cache not synced): a profile without ReserveHooks binds anyway (the watch
//   counts the pod); one with them refuses ("cannot reserve the pod ...")
//   node lock held by another pod  "lock node <node> (<annotation>): held by
//                                  <ns>/<pod> since <time> ..." (nothing written)
//   past target.not_after          "too late: ..." (kUnavailable, nothing
//                                  written), checked on entry and again by the
//                                  client before the Binding goes out
//   Binding failed                 "<api status>"; after a timeout
//                                  (kDeadlineExceeded) the Binding may exist,
//                                  so the reservation stays (the watch
//                                  confirms or the TTL ends it)
//
// Thread-safety: Run may be called from many threads at once; the cache
// serialises the reservations. Everything given at construction must outlive
// the cycle.
#ifndef SCHEDEXT_PIPELINE_BIND_CYCLE_H_
#define SCHEDEXT_PIPELINE_BIND_CYCLE_H_

#include <chrono>
#include <functional>
#include <string_view>

#include "schedext/cluster/binder.h"
#include "schedext/cluster/cache.h"
#include "schedext/model/pod_info.h"
#include "schedext/pipeline/profile.h"
#include "schedext/status.h"

namespace schedext::pipeline {

// The pod to bind and where (views that need only live for Run).
struct BindTarget {
  std::string_view pod_namespace;
  std::string_view pod_name;
  std::string_view pod_uid;  // empty: the pod cannot be reserved
  std::string_view node;
  // When the caller stops waiting (kube-scheduler's extender httpTimeout,
  // from the request's arrival): a bind that could only start later is not
  // made, since the scheduler has given up on it and will retry the pod.
  std::chrono::steady_clock::time_point not_after = std::chrono::steady_clock::time_point::max();
};

// The message of a bind refused for want of time.
inline constexpr std::string_view kTooLate =
    "too late: the bind waited past server.bindDeadlineMillis before it could be sent; nothing "
    "was written (the scheduler retries the pod)";

struct BindCycleOptions {
  // Each may be null: no cluster cache (no reservation), no API connection
  // (every bind fails).
  cluster::ClusterCache* cache = nullptr;
  cluster::PodBinder* binder = nullptr;
  // After each successful bind (also after a timeout: the Binding may
  // exist), outside every lock: policy::PolicyHost::NotifyPodBound. The pod
  // is the reserved one (requests, annotations), or only its identity when
  // it was not reserved and the cache does not know it.
  std::function<void(const model::PodInfo& pod, std::string_view node)> on_bound;
};

class BindCycle {
 public:
  explicit BindCycle(BindCycleOptions options);

  // Runs the cycle for `target` with `profile`'s policies. OK once bound;
  // else the Error to answer, with the "bind <ns>/<name> to <node>: " prefix.
  Status Run(const Profile& profile, const BindTarget& target) const;

  bool has_binder() const { return options_.binder != nullptr; }

 private:
  const BindCycleOptions options_;
};

}  // namespace schedext::pipeline

#endif  // SCHEDEXT_PIPELINE_BIND_CYCLE_H_
