// The extender v1 messages as decoded views (requests) and encoder inputs
// (replies). Wire key names live only in the wire layer's .cc files.
//
// Decoded views point into the request buffer and the decoder's parser: they
// are valid until the next Decode* call on the same RequestDecoder and while the
// buffer is unchanged. They are reused across requests to keep their capacity.
#ifndef SCHEDEXT_WIRE_MESSAGES_H_
#define SCHEDEXT_WIRE_MESSAGES_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "schedext/model/node_info.h"
#include "schedext/model/pod_info.h"

namespace schedext::wire {

// Which key carried the nodes: kFullNodes when "Nodes" is non-null
// (nodeCacheCapable: false), kNodeNames when "NodeNames" is non-null and
// "Nodes" is null (nodeCacheCapable: true), kNone when both are null or absent.
// Replies take the shape of the request.
enum class NodeMode { kNone, kFullNodes, kNodeNames };

// ExtenderArgs: the body of filter and prioritize.
struct ExtenderArgsView {
  bool has_pod = false;  // "Pod" present and not null
  model::PodInfo pod;
  NodeMode mode = NodeMode::kNone;
  // kFullNodes: the decoded node objects, in request order (raw_json set).
  std::vector<model::NodeInfo> nodes;
  // The node names in request order, in both modes.
  std::vector<std::string_view> node_names;
  // kNodeNames, when every name was read straight from the body (an array of
  // strings none of which needs escaping): each name then sits between '"'
  // bytes of the body, so its JSON literal is the body's bytes from
  // name.data() - 1 to name.data() + name.size() + 1. The encoders copy such
  // literals whole (FilterResultView::names_quoted, AppendHostPriorityList).
  bool names_quoted = false;
};

// ExtenderBindingArgs.
struct BindingArgsView {
  std::string_view pod_name;
  std::string_view pod_namespace;
  std::string_view pod_uid;
  std::string_view node;
};

// One entry of NodeNameToVictims / NodeNameToMetaVictims.
struct VictimsView {
  std::string_view node;
  // Full pods (NodeNameToVictims) or, for MetaVictims, PodInfos with only `uid`
  // set. Most important first, as the scheduler sent them.
  std::vector<model::PodInfo> pods;
  int64_t num_pdb_violations = 0;
};

// ExtenderPreemptionArgs.
struct PreemptionArgsView {
  bool has_pod = false;
  model::PodInfo pod;
  // true: the victims came as full pods (NodeNameToVictims, non-cache mode).
  bool full_pods = false;
  // NodeNameToVictims or NodeNameToMetaVictims was present and not null:
  // this is a preemption body (explain tells it from a filter body by this).
  // Set as soon as the key is read, so also when its value then fails to
  // decode.
  bool has_victims_map = false;
  // Request order. Only the first `node_count` entries are meaningful (the
  // rest are kept for reuse).
  std::vector<VictimsView> nodes;
  size_t node_count = 0;
  std::span<const VictimsView> candidates() const { return {nodes.data(), node_count}; }
};

// ---- Reply inputs -------------------------------------------------------

struct FailedNode {
  std::string_view name;
  std::string_view reason;
};

// ExtenderFilterResult.
struct FilterResultView {
  NodeMode mode = NodeMode::kNodeNames;  // shape of the reply (kNone: NodeNames)
  // kNodeNames: the passing names; kFullNodes: the passing nodes' raw JSON.
  std::span<const std::string_view> passing;
  std::span<const FailedNode> failed;        // FailedNodes
  std::span<const FailedNode> unresolvable;  // FailedAndUnresolvableNodes
  // Every node name of the result (the passing ones in kNodeNames, the failed
  // and unresolvable ones in any mode) needs no escaping and its buffer holds
  // it between '"' bytes (ExtenderArgsView::names_quoted): names are copied as
  // literals, and passing names that follow each other there after a single
  // ',' as one span.
  bool names_quoted = false;
};

// HostPriority.
struct HostScore {
  std::string_view host;
  int64_t score = 0;
};

// One MetaVictims entry of ExtenderPreemptionResult.
struct MetaVictimsEntry {
  std::string_view node;
  std::span<const std::string_view> uids;  // never empty in a valid reply
  int64_t num_pdb_violations = 0;
};

}  // namespace schedext::wire

#endif  // SCHEDEXT_WIRE_MESSAGES_H_
