// REST paths of watched resources. See resource_path.h.
#include "schedext/cluster/resource_path.h"

#include <utility>

#include "cluster/api_reply.h"

namespace schedext::cluster {

using internal::PercentEncode;

std::string CollectionPath(const policy::WatchSpec& spec) {
  std::string path;
  if (spec.group.empty()) {
    path.append("/api/");
  } else {
    path.append("/apis/").append(PercentEncode(spec.group)).append("/");
  }
  path.append(PercentEncode(spec.version));
  if (!spec.namespace_name.empty()) {
    path.append("/namespaces/").append(PercentEncode(spec.namespace_name));
  }
  path.append("/").append(PercentEncode(spec.resource));
  return path;
}

std::string SelectorQuery(const policy::WatchSpec& spec) {
  std::string query;
  if (!spec.label_selector.empty()) {
    query.append("labelSelector=").append(PercentEncode(spec.label_selector));
  }
  if (!spec.field_selector.empty()) {
    if (!query.empty()) {
      query.push_back('&');
    }
    query.append("fieldSelector=").append(PercentEncode(spec.field_selector));
  }
  return query;
}

std::string WatchName(const policy::WatchSpec& spec) {
  std::string name = spec.resource;
  if (!spec.group.empty()) {
    name.append(".").append(spec.group);
  }
  if (!spec.namespace_name.empty()) {
    name.append(" in ").append(spec.namespace_name);
  }
  return name;
}

InformerOptions WatchInformerOptions(const policy::WatchSpec& spec, InformerOptions base) {
  base.kind = ResourceKind::kObjects;
  base.path = CollectionPath(spec);
  base.extra_query = SelectorQuery(spec);
  base.name = WatchName(spec);
  return base;
}

}  // namespace schedext::cluster
