// NodeFields: the optional blocks of a v1.Node that a full-mode request
// decodes for its profile.
//
// Why: a full-mode request carries every node whole (~11 KB each), and turning
// labels, annotations and resource lists into NodeInfo costs about a tenth of
// the server's CPU per request, which on a small machine is time the request
// waits. A profile decodes only the blocks its policies read
// (Policy::NodeFieldsRead); the others stay empty. Name, uid, taints,
// unschedulable and conditions are always decoded. The cluster cache's nodes
// are always whole.
#ifndef SCHEDEXT_MODEL_NODE_FIELDS_H_
#define SCHEDEXT_MODEL_NODE_FIELDS_H_

#include <cstdint>

namespace schedext::model {

enum class NodeFields : uint8_t {
  kNone = 0,
  kLabels = 1U << 0,       // metadata.labels
  kAnnotations = 1U << 1,  // metadata.annotations
  kResources = 1U << 2,    // status.capacity and status.allocatable
  kAll = kLabels | kAnnotations | kResources,
};

constexpr NodeFields operator|(NodeFields a, NodeFields b) {
  return static_cast<NodeFields>(static_cast<uint8_t>(a) | static_cast<uint8_t>(b));
}

// Whether `set` holds every block of `blocks`.
constexpr bool Includes(NodeFields set, NodeFields blocks) {
  return (static_cast<uint8_t>(set) & static_cast<uint8_t>(blocks)) ==
         static_cast<uint8_t>(blocks);
}

}  // namespace schedext::model

#endif  // SCHEDEXT_MODEL_NODE_FIELDS_H_
