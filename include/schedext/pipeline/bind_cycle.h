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
//   2. annotate: write the hooks' annotations to the pod (PodAnnotator, a
//      merge patch with the uid precondition) — skipped when there are none;
//   3. bind: create the Binding (PodBinder), with no lock held;
//   4. confirm (ClusterCache::FinishBinding, the reservation's TTL starts;
//      the watch then replaces it with the API's object) and tell the
//      pod-bound observers — or forget: drop the reservation, remove the
//      annotations with the resourceVersion precondition of what step 2
//      wrote (the real API answers a stale resourceVersion or uid with 409,
//      kFailedPrecondition: the pod changed, e.g. the failed bind did happen,
//      and the annotations are left alone), and Unreserve the hooks.
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
//   annotating failed              "writing annotations: <api>" (no Binding)
//   Binding failed                 "<api status>"; after a timeout
//                                  (kDeadlineExceeded) the Binding may exist,
//                                  so the reservation and the annotations
//                                  stay (the watch confirms or the TTL ends it)
//
// Thread-safety: Run may be called from many threads at once; the cache
// serialises the reservations. Everything given at construction must outlive
// the cycle.
#ifndef SCHEDEXT_PIPELINE_BIND_CYCLE_H_
#define SCHEDEXT_PIPELINE_BIND_CYCLE_H_

#include <functional>
#include <string_view>

#include "schedext/cluster/binder.h"
#include "schedext/cluster/cache.h"
#include "schedext/cluster/pod_annotator.h"
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
};

struct BindCycleOptions {
  // Each may be null: no cluster cache (no reservation), no API connection
  // (every bind fails), no annotator (a profile that annotates cannot bind).
  cluster::ClusterCache* cache = nullptr;
  cluster::PodBinder* binder = nullptr;
  cluster::PodAnnotator* annotator = nullptr;
  // After each successful bind (also after a timeout: the Binding may
  // exist), outside every lock: policy::PolicyHost::NotifyPodBound. The pod
  // is the reserved one (requests, annotations), or only its identity when
  // it was not reserved and the cache does not know it.
  std::function<void(const model::PodInfo& pod, std::string_view node)> on_bound;
  // A rollback that could not remove the annotations (why, for the log);
  // called on the bind's thread. Null: not reported.
  std::function<void(std::string_view message)> on_rollback_failure;
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
