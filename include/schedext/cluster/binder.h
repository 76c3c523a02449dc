// PodBinder: creates the v1 Binding of a pod (the bind verb). The Kubernetes
// API client implements it; without one, bind answers a clear Error.
//
// Thread-safety: implementations must allow concurrent Bind calls.
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

class PodBinder {
 public:
  virtual ~PodBinder() = default;
  // OK only once the API server has accepted the Binding (or the pod is
  // already bound to that same node). The message of an error says what the
  // API server answered.
  virtual Status Bind(const BindRequest& request) = 0;
};

}  // namespace schedext::cluster

#endif  // SCHEDEXT_CLUSTER_BINDER_H_
