#include "schedext/policy/node_summary.h"

#include <algorithm>

namespace schedext::policy {

void WriteNodeSummaries(std::span<const NodeSummaryRegistration> summaries,
                        model::NodeInfo& node) {
  // Invalid while written: a summarizer that reads another policy's slot
  // gets the computed answer, never half-written bytes.
  node.summarized_usage = nullptr;
  std::fill(std::begin(node.summary), std::end(node.summary), std::byte{0});
  for (const NodeSummaryRegistration& registration : summaries) {
    registration.summarizer->Summarize(
        node, std::span<std::byte>(node.summary + registration.offset, registration.size));
  }
  // A cache built without the policies' registrations (tests, tools that
  // build profiles with their own PolicyHost) writes no summary at all: the
  // node must not claim one, or every slot would read zeros as a summary.
  node.summarized_usage = summaries.empty() ? nullptr : node.usage;
}

}  // namespace schedext::policy
