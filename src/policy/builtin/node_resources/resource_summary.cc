#include "policy/builtin/node_resources/resource_summary.h"

#include <functional>
#include <memory>

#include "schedext/status.h"

namespace schedext::policy {
namespace {

// The key of the shared slot among the handle's Shared objects.
constexpr std::string_view kSharedKey = "NodeResources/summary";

}  // namespace

ResourceSummary SummarizeResources(const model::NodeInfo& node) {
  ResourceSummary summary;
  summary.allocatable_cpu = node.allocatable.milli_cpu;
  summary.allocatable_memory = node.allocatable.memory;
  summary.allocatable_ephemeral_storage = node.allocatable.ephemeral_storage;
  summary.allocatable_pods = node.allocatable.pods;
  if (node.usage != nullptr) {
    const model::NodeUsage& usage = *node.usage;
    summary.requested_cpu = usage.requested.milli_cpu;
    summary.requested_memory = usage.requested.memory;
    summary.requested_ephemeral_storage = usage.requested.ephemeral_storage;
    summary.scoring_cpu = usage.scoring_requested.milli_cpu;
    summary.scoring_memory = usage.scoring_requested.memory;
    summary.pods = usage.pods;
  }
  return summary;
}

ResourceSummaries ResourceSummaries::For(PolicyHandle* handle) {
  if (handle == nullptr) {
    return {};
  }
  // A pure function of the node: it captures nothing, so the cache may keep
  // it as long as it likes.
  StatusOr<std::shared_ptr<ResourceSummaries>> shared = handle->Shared<ResourceSummaries>(
      kSharedKey, [handle]() -> StatusOr<std::shared_ptr<ResourceSummaries>> {
        auto made = std::make_shared<ResourceSummaries>();
        made->slot_ = handle->AddNodeSummary<ResourceSummary>(
            [](const model::NodeInfo& node) { return SummarizeResources(node); });
        return made;
      });
  // make cannot fail; without the shared object every policy reads its nodes.
  return shared.ok() ? **shared : ResourceSummaries{};
}

}  // namespace schedext::policy
