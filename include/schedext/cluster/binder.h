// PodBinder: the API writes of the bind verb — the v1 Binding of a pod, and
// the node lock some device plugins expect around it. The Kubernetes API
// client implements it (KubeBinder); without one, bind answers a clear Error.
//
// Thread-safety: implementations must allow concurrent calls.
#ifndef SCHEDEXT_CLUSTER_BINDER_H_
#define SCHEDEXT_CLUSTER_BINDER_H_

#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "schedext/status.h"

namespace schedext::cluster {

struct BindRequest {
  std::string_view pod_namespace;
  std::string_view pod_name;
  std::string_view pod_uid;
  std::string_view node;
  // Set on the pod by the same write that sets spec.nodeName: kube-apiserver
  // copies a Binding's metadata.annotations onto the pod (BindingREST's
  // setPodHostAndAnnotations), so the pod is never bound without them nor
  // annotated without being bound.
  std::span<const std::pair<std::string, std::string>> annotations = {};
  // The Binding is not sent after this (the caller has stopped waiting for
  // the answer); the bind then fails with kUnavailable, having written
  // nothing.
  std::chrono::steady_clock::time_point not_after = std::chrono::steady_clock::time_point::max();
};

// A node lock (policy::NodeLockSpec) for one pod: the annotation `annotation`
// on Node `node`, whose value is "<RFC3339 UTC time>,<namespace>,<pod>" as
// HAMi writes and reads it (a bare time, from older HAMi, names no pod).
struct NodeLockRequest {
  std::string_view annotation;
  std::string_view node;
  std::string_view pod_namespace;
  std::string_view pod_name;
  std::chrono::seconds expiry{0};  // a lock written longer ago than this is free
};

class PodBinder {
 public:
  virtual ~PodBinder() = default;
  // Takes the lock for the pod: sets the annotation when the node has none,
  // or has one that this pod holds (a retried bind), that is older than
  // `expiry`, or whose pod no longer exists; the write is conditional on
  // the node's resourceVersion, so two binders cannot both take it. While
  // another pod holds it, kFailedPrecondition naming that pod. Default: a
  // binder that cannot lock nodes (kFailedPrecondition).
  virtual Status LockNode(const NodeLockRequest& request) {
    return FailedPreconditionError("this binder cannot take the node lock " +
                                   std::string(request.annotation));
  }
  // Removes the annotation if this pod holds the lock; OK otherwise too.
  virtual Status UnlockNode(const NodeLockRequest& /*request*/) { return OkStatus(); }
  // OK only once the API server has accepted the Binding (or the pod is
  // already bound to that same node). The message of an error says what the
  // API server answered.
  virtual Status Bind(const BindRequest& request) = 0;
};

}  // namespace schedext::cluster

#endif  // SCHEDEXT_CLUSTER_BINDER_H_
