// NodeDirectory: where node-cache-mode requests (NodeNames) and preempt find
// node objects. The cluster cache implements it; without one, schedext has no
// node objects for names and says so in the reply.
//
// Thread-safety: implementations must allow concurrent Resolve calls.
#ifndef SCHEDEXT_CLUSTER_NODE_DIRECTORY_H_
#define SCHEDEXT_CLUSTER_NODE_DIRECTORY_H_

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "schedext/model/node_info.h"
#include "schedext/status.h"

namespace schedext::cluster {

class NodeDirectory {
 public:
  virtual ~NodeDirectory() = default;

  // Resolves each name to its node: out[i] is the node named names[i], or
  // nullptr when the directory does not know it. `keep_alive` receives what
  // must stay alive while the pointers are used (a snapshot). kUnavailable
  // before the directory has synced.
  virtual Status Resolve(std::span<const std::string_view> names,
                         std::vector<const model::NodeInfo*>& out,
                         std::shared_ptr<const void>& keep_alive) const = 0;
};

}  // namespace schedext::cluster

#endif  // SCHEDEXT_CLUSTER_NODE_DIRECTORY_H_
