#include "schedext/policy/node_summary.h"

#include <algorithm>

namespace schedext::policy {

void WriteNodeSummaries(std::span<const NodeSummaryRegistration> summaries,
                        model::NodeInfo& node) {
  // Invalid while written: a summarizer that reads another policy's slot
  // gets the computed answer, never half-written bytes.
  node.summarized_usage = nullptr;
  node.summary_layout = nullptr;
  std::fill(std::begin(node.summary), std::end(node.summary), std::byte{0});
  for (const NodeSummaryRegistration& registration : summaries) {
    registration.summarizer->Summarize(
        node, std::span<std::byte>(node.summary + registration.offset, registration.size));
  }
  // Without registrations (a cache built without the policies' host) or
  // with two hosts' registrations mixed, no slot may read these bytes.
  const void* layout = summaries.empty() ? nullptr : summaries.front().layout;
  for (const NodeSummaryRegistration& registration : summaries) {
    if (registration.layout != layout) {
      layout = nullptr;
    }
  }
  if (layout != nullptr) {
    node.summarized_usage = node.usage;
    node.summary_layout = layout;
  }
}

}  // namespace schedext::policy
