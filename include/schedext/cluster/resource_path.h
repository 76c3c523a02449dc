// The REST side of a policy's watch (policy::WatchSpec: group, version,
// resource, namespace, selectors): the collection path and query its informer
// lists and watches, and the name the logs give it. The Kubernetes API serves
// the core group under /api/<version>/ and every other group, CRDs included,
// under /apis/<group>/<version>/; a namespace narrows either to
// .../namespaces/<namespace>/<resource>.
//
// Called by whoever builds the watch informers (ClusterConnection, tests), on
// specs PolicyHost::Watch accepted. Pure functions.
#ifndef SCHEDEXT_CLUSTER_RESOURCE_PATH_H_
#define SCHEDEXT_CLUSTER_RESOURCE_PATH_H_

#include <string>

#include "schedext/cluster/informer.h"
#include "schedext/policy/node_accounting.h"

namespace schedext::cluster {

// "/api/v1/namespaces/kube-system/configmaps", "/apis/example.com/v1/widgets".
// Path segments are percent-encoded.
std::string CollectionPath(const policy::WatchSpec& spec);

// "labelSelector=app%3Dgpu&fieldSelector=metadata.name%3Dx", the selectors as
// query parameters (each only when given; "" without any).
std::string SelectorQuery(const policy::WatchSpec& spec);

// "configmaps in kube-system", "widgets.example.com" (all namespaces), for logs.
std::string WatchName(const policy::WatchSpec& spec);

// `base` (paging, timeouts, backoff) made into the options of `spec`'s
// informer: kind kObjects, its path, query and name.
InformerOptions WatchInformerOptions(const policy::WatchSpec& spec, InformerOptions base);

}  // namespace schedext::cluster

#endif  // SCHEDEXT_CLUSTER_RESOURCE_PATH_H_
