// NodeInfo: the compact view of a v1.Node that policies read.
//
// Strings are views into storage kept alive by whoever built the NodeInfo (the
// request body or the decoder's parser for a request). Thread-safety: an
// immutable value once built; safe to read from many threads.
#ifndef SCHEDEXT_MODEL_NODE_INFO_H_
#define SCHEDEXT_MODEL_NODE_INFO_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "schedext/model/node_state.h"
#include "schedext/model/resources.h"
#include "schedext/model/selectors.h"

namespace schedext::model {

struct NodeCondition {
  std::string_view type;    // Ready, MemoryPressure, ...
  std::string_view status;  // "True", "False", "Unknown"
};

// The node conditions policies check, one bit each, as NodeInfo carries them
// in ConditionSummary.
enum ConditionBit : uint8_t {
  kConditionReady = 1U << 0,
  kConditionMemoryPressure = 1U << 1,
  kConditionDiskPressure = 1U << 2,
  kConditionPidPressure = 1U << 3,
  kConditionNetworkUnavailable = 1U << 4,
};

// Which of the ConditionBit conditions a node reports and which of those have
// status "True" (exactly; "Unknown" or "true" are not). A type reported twice
// counts as its first report, as NodeInfo::ConditionStatus does. Computed once
// when the conditions are filled, so a per-node filter reads one word instead
// of comparing condition strings that live elsewhere in memory.
struct ConditionSummary {
  uint8_t reported = 0;  // ConditionBit mask
  uint8_t is_true = 0;   // ConditionBit mask, a subset of `reported`

  bool operator==(const ConditionSummary&) const = default;
};

// The summary of `conditions` (see ConditionSummary).
ConditionSummary SummarizeConditions(std::span<const NodeCondition> conditions);

// What the pods bound or assumed on a node request, as the cluster cache counts
// them (kube-scheduler's NodeInfo.Requested / NonZeroRequested / len(Pods)).
struct NodeUsage {
  ResourceList requested;          // sum of the pods' EffectiveRequests
  ResourceList scoring_requested;  // sum of the pods' PodInfo::scoring_requests
  int64_t pods = 0;
  // Stateful policies' per-node state, by the slot each registered
  // (policy/node_accounting.h); empty when no policy keeps any.
  NodeStates states;
};

// Bytes of NodeInfo::summary: what the policies' node summaries may use in
// all (policy/node_summary.h). With the members before them they fill the
// NodeInfo's first six cache lines: room for every built-in summary at once
// (NodeResourcesFit 80, GpuShare 48, HamiVgpu 120, NodeLabel and NodeNumeric
// 16 each), as bench/prod-profiles.yaml configures them.
inline constexpr size_t kNodeSummaryBytes = 328;

// Aligned to a cache line so that its first lines hold exactly what the
// per-node loops read: usage, taints, conditions, then the summaries.
struct alignas(64) NodeInfo {
  // The cluster cache's view of the pods on this node; nullptr when schedext
  // runs without a cluster connection (resource policies then answer an error).
  // Points into a snapshot the request keeps alive.
  const NodeUsage* usage = nullptr;
  // The usage `summary` was written with by the cluster cache; the summary
  // holds only while `usage` is still that (has_summary()). A NodeInfo nobody
  // summarized, or a copy given another usage, has none.
  const NodeUsage* summarized_usage = nullptr;
  // Whose registrations laid `summary` out (policy::PolicyHost): a slot reads
  // only summaries of its own layout, never another host's bytes.
  const void* summary_layout = nullptr;
  std::vector<Taint> taints;
  // SummarizeConditions(conditions): whoever fills `conditions` (the decoder,
  // test builders) calls UpdateConditionSummary() afterwards; copies keep it.
  ConditionSummary condition_summary;
  bool unschedulable = false;  // spec.unschedulable
  // The policies' node summaries (policy/node_summary.h), each at the offset
  // its registration got; meaningful only when has_summary().
  alignas(8) std::byte summary[kNodeSummaryBytes] = {};

  std::string_view name;
  std::string_view uid;
  StringMap labels;
  StringMap annotations;
  std::vector<NodeCondition> conditions;
  ResourceList capacity;
  ResourceList allocatable;
  // Full-node mode: the node object's exact bytes in the request, echoed back
  // unmodified by a passing filter reply. Empty otherwise.
  std::string_view raw_json;

  bool has_summary() const { return usage != nullptr && summarized_usage == usage; }
  // status of the condition `type`, or nullopt when the node does not report it.
  std::optional<std::string_view> ConditionStatus(std::string_view type) const;
  // Sets condition_summary from `conditions`.
  void UpdateConditionSummary() { condition_summary = SummarizeConditions(conditions); }
  // Resets every field, keeping vector capacity for reuse.
  void Clear();
};

}  // namespace schedext::model

#endif  // SCHEDEXT_MODEL_NODE_INFO_H_
