// PodAnnotator: writes annotations of a pod before its Binding is created
// (policies' ReserveHook annotations, e.g. GPU sharing's device choice), and
// removes them again when the bind fails.
//
// The Kubernetes implementation sends a JSON merge patch
//   PATCH /api/v1/namespaces/{ns}/pods/{name}
//   Content-Type: application/merge-patch+json
//   {"metadata":{"uid":"<uid>","resourceVersion":"<rv>","annotations":{"k":"v","gone":null}}}
// The uid guards against a pod deleted and re-created under the same name: a
// merge patch has no UID precondition, so kube-apiserver refuses the patched
// uid as a change of an immutable field (422 "metadata.uid: Invalid value:
// ... field is immutable"; ClusterAnnotationApiTest). resourceVersion, when
// given, makes it an optimistic-concurrency write (409 Conflict when the pod
// changed since: a rollback then must not undo a bind that did happen).
//
// Thread-safety: implementations must allow concurrent calls.
#ifndef SCHEDEXT_CLUSTER_POD_ANNOTATOR_H_
#define SCHEDEXT_CLUSTER_POD_ANNOTATOR_H_

#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "schedext/cluster/kube_client.h"
#include "schedext/status.h"

namespace schedext::cluster {

struct AnnotationPatch {
  std::string_view pod_namespace;
  std::string_view pod_name;
  std::string_view pod_uid;           // required: the precondition
  std::string_view resource_version;  // empty: no resourceVersion precondition
  std::span<const std::pair<std::string, std::string>> set;  // key → value
  std::span<const std::string> remove;                       // keys set to null
};

class PodAnnotator {
 public:
  virtual ~PodAnnotator() = default;
  // The pod's metadata.resourceVersion after the patch. Errors say what the
  // API server answered: kFailedPrecondition for 409 (resourceVersion
  // precondition failed), 422 (stale uid) and other 4xx (404: the pod is gone),
  // kUnavailable for 5xx / 429 / transport failures, kDeadlineExceeded for
  // timeouts; kInvalidArgument for a patch without namespace, name or uid.
  virtual StatusOr<std::string> Annotate(const AnnotationPatch& patch) = 0;
};

// The PodAnnotator of the Kubernetes API. `client` must outlive it.
class KubePodAnnotator final : public PodAnnotator {
 public:
  explicit KubePodAnnotator(KubeClient& client) : client_(client) {}
  StatusOr<std::string> Annotate(const AnnotationPatch& patch) override;
  // The merge-patch body for `patch` (exposed for tests).
  static std::string PatchBody(const AnnotationPatch& patch);

 private:
  KubeClient& client_;
};

}  // namespace schedext::cluster

#endif  // SCHEDEXT_CLUSTER_POD_ANNOTATOR_H_
