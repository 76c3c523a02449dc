// KubeBinder: the PodBinder that creates a v1 Binding through the Kubernetes
// API (POST /api/v1/namespaces/{ns}/pods/{name}/binding), the way
// kube-scheduler's DefaultBinder does.
//
// The Binding carries the request's annotations in its metadata (the API
// server sets them on the pod in the same write as spec.nodeName) and the
// pod's uid (a precondition). A request with a `not_after` goes out only if
// the client's rate limiter lets it by then (KubeClient::PostBy); otherwise
// nothing is sent and the answer is kUnavailable.
//
// Outcomes (see extender-protocol.md §4.1):
//   * 2xx: bound. `on_bound` runs (the cache assumes the pod), then OK.
//   * 409 Conflict: the pod is read back (GET .../pods/{name}); if its
//     spec.nodeName is the requested node (and its uid the requested uid,
//     when one was given) an earlier attempt succeeded and only its answer was
//     lost, so this is OK too (and `on_bound` runs). Otherwise an error.
//   * Anything else is an error whose message says what the API server
//     answered, quoting its Status message: `409 Conflict: Operation cannot
//     be fulfilled on pods/binding "web-1": pod web-1 is already assigned to
//     node "n2"`, `404 Not Found: pods "web-1" not found`, or the client's
//     transport error (`timeout after 5s (POST https://...)`).
// Codes: kFailedPrecondition for 4xx (400, 401, 403, 404, 409, 422, ...),
// kUnavailable for 5xx, 429 and transport failures, kDeadlineExceeded for
// client timeouts and 504; kInvalidArgument when the request lacks a
// namespace, name or node. A bind that did not happen is never OK.
//
// Thread-safety: Bind may be called concurrently (the KubeClient allows it;
// `on_bound` must too). The binder holds no lock while calling the API.
#ifndef SCHEDEXT_CLUSTER_KUBE_BINDER_H_
#define SCHEDEXT_CLUSTER_KUBE_BINDER_H_

#include <functional>

#include "schedext/cluster/binder.h"
#include "schedext/cluster/kube_client.h"
#include "schedext/status.h"

namespace schedext::cluster {

class KubeBinder final : public PodBinder {
 public:
  // Called after every successful bind, before Bind returns OK; the request's
  // views are valid only during the call.
  using OnBound = std::function<void(const BindRequest&)>;

  // `client` must outlive the binder.
  explicit KubeBinder(KubeClient& client, OnBound on_bound = nullptr);
  KubeBinder(const KubeBinder&) = delete;
  KubeBinder& operator=(const KubeBinder&) = delete;

  // PodBinder
  Status Bind(const BindRequest& request) override;
  // kube_node_lock.cc: GET the node, then a JSON merge patch of the
  // annotation carrying the node's resourceVersion (409 on a concurrent
  // write: read again and retry, a few times). A lock held by another pod
  // is checked for that pod (GET; 404 frees the lock).
  Status LockNode(const NodeLockRequest& request) override;
  Status UnlockNode(const NodeLockRequest& request) override;

  // The JSON body of the Binding for `request` (exposed for tests).
  static std::string BindingBody(const BindRequest& request);

 private:
  KubeClient& client_;
  const OnBound on_bound_;
};

}  // namespace schedext::cluster

#endif  // SCHEDEXT_CLUSTER_KUBE_BINDER_H_
