// The node summary the resource policies share (policy/node_summary.h): the
// well-known resources of a node's allocatable and of its usage, which
// NodeResourcesFit and the allocation scorers read on every node. Internal to
// the policy layer.
//
// Why one summary for all of them: a profile such as
//   NodeResourcesFit + LeastAllocated + BalancedAllocation
// reads the same allocatable and requested amounts three times per node. They
// live in the NodeInfo's allocatable (several cache lines into the node) and
// in the NodeUsage (another heap object); the summary copies them into the
// node's first two lines, once per PolicyHandle, whichever policy registers
// first.
//
// What it does not hold: hugepages-* and extended (scalar) resources, which
// the policies still look up in node.allocatable and node.usage->requested
// when the pod or the configuration names one. The summary holds the amounts
// themselves, not derived values, so the policies' arithmetic (128-bit sums,
// saturating adds, the int64 edge cases) is unchanged and runs on the same
// numbers whichever way they were read.
//
// Thread-safety: the slot is immutable once the factory has built it.
#ifndef SCHEDEXT_POLICY_BUILTIN_NODE_RESOURCES_RESOURCE_SUMMARY_H_
#define SCHEDEXT_POLICY_BUILTIN_NODE_RESOURCES_RESOURCE_SUMMARY_H_

#include <cstdint>

#include "schedext/model/node_info.h"
#include "schedext/policy/handle.h"
#include "schedext/policy/node_summary.h"

namespace schedext::policy {

struct ResourceSummary {
  // node.allocatable
  int64_t allocatable_cpu = 0;  // milli-cores
  int64_t allocatable_memory = 0;
  int64_t allocatable_ephemeral_storage = 0;
  int64_t allocatable_pods = 0;
  // node.usage->requested
  int64_t requested_cpu = 0;
  int64_t requested_memory = 0;
  int64_t requested_ephemeral_storage = 0;
  // node.usage->scoring_requested (the scorers' cpu and memory)
  int64_t scoring_cpu = 0;
  int64_t scoring_memory = 0;
  // node.usage->pods
  int64_t pods = 0;
};
// Two cache lines at most wherever it lands, one and a quarter at best.
static_assert(sizeof(ResourceSummary) == 80);

// The summary of `node` read from its fields (all zero usage when the node
// has none; the policies check node.usage before they read it).
ResourceSummary SummarizeResources(const model::NodeInfo& node);

// The resource policies' handle on the shared summary.
class ResourceSummaries {
 public:
  // The slot registered under `handle` by the first resource policy built
  // with it (registering it then); an empty slot without a handle.
  static ResourceSummaries For(PolicyHandle* handle);

  // The node's summary: its bytes when the cache wrote them for the node's
  // current usage, else read from the node (the same values).
  ResourceSummary Of(const model::NodeInfo& node) const {
    ResourceSummary summary;
    return slot_.Get(node, summary) ? summary : SummarizeResources(node);
  }

  bool present() const { return slot_.present(); }

 private:
  NodeSummarySlot<ResourceSummary> slot_;
};

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_BUILTIN_NODE_RESOURCES_RESOURCE_SUMMARY_H_
