// PodBinder: creates the v1 Binding of a pod (the bind verb). The Kubernetes
// API client implements it; without one, bind answers a clear Error.
//
// Thread-safety: implementations must allow concurrent Bind calls.
#ifndef SCHEDEXT_CLUSTER_BINDER_H_
#define SCHEDEXT_CLUSTER_BINDER_H_

#include <string_view>

#include "schedext/status.h"

namespace schedext::cluster {

struct BindRequest {
  std::string_view pod_namespace;
  std::string_view pod_name;
  std::string_view pod_uid;
  std::string_view node;
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
