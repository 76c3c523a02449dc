// ExplainCachedPod (explain/explain.h): GET /explain/pod/<ns>/<name>, a
// pending pod explained against the live cluster cache, with no request body.
#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "schedext/explain/explain.h"
#include "schedext/wire/encoder.h"

namespace schedext::explain {

int ExplainCachedPod(const cluster::ClusterCache& cache,
                     std::span<const std::shared_ptr<const pipeline::Profile>> profiles,
                     size_t default_profile, std::string_view rest, std::string& body) {
  // <namespace>/<name>[/<profile>]
  std::vector<std::string_view> parts;
  for (size_t start = 0; start <= rest.size();) {
    const size_t slash = std::min(rest.find('/', start), rest.size());
    parts.push_back(rest.substr(start, slash - start));
    start = slash + 1;
  }
  const bool malformed =
      parts.size() < 2 || parts.size() > 3 ||
      std::any_of(parts.begin(), parts.end(), [](std::string_view p) { return p.empty(); });
  if (malformed) {
    wire::AppendErrorBody("explain: want GET /explain/pod/<namespace>/<name>[/<profile>]", body);
    return 400;
  }
  const pipeline::Profile* profile =
      default_profile < profiles.size() ? profiles[default_profile].get() : nullptr;
  if (parts.size() == 3) {
    profile = nullptr;
    for (const auto& p : profiles) {
      if (p->name() == parts[2]) profile = p.get();
    }
  }
  if (profile == nullptr) {
    wire::AppendErrorBody("explain: no such profile", body);
    return 404;
  }

  // Every view below points into this snapshot, held until the end.
  std::shared_ptr<const cluster::Snapshot> snapshot = cache.snapshot();
  if (!snapshot->synced()) {
    wire::AppendErrorBody("explain: the cluster cache has not synced yet", body);
    cache.Release(snapshot);
    return 503;
  }
  const model::PodInfo* pod = nullptr;
  snapshot->ForEachPod([&](const model::PodInfo& p, bool /*assumed*/) {
    if (p.namespace_name == parts[0] && p.name == parts[1]) pod = &p;
  });
  if (pod == nullptr) {
    wire::AppendErrorBody("explain: the cluster cache has no pod " + std::string(parts[0]) + "/" +
                              std::string(parts[1]),
                          body);
    cache.Release(snapshot);
    return 404;
  }
  std::vector<const model::NodeInfo*> nodes;
  snapshot->ForEachNode([&](const model::NodeInfo& n) { nodes.push_back(&n); });
  std::sort(nodes.begin(), nodes.end(),
            [](const model::NodeInfo* a, const model::NodeInfo* b) { return a->name < b->name; });

  wire::ExtenderArgsView args;
  args.has_pod = true;
  args.pod = *pod;
  args.mode = wire::NodeMode::kNodeNames;
  for (const model::NodeInfo* n : nodes) args.node_names.push_back(n->name);
  std::vector<uint32_t> node_index(nodes.size());
  std::iota(node_index.begin(), node_index.end(), 0U);

  pipeline::Explanation explanation;
  profile->Explain(*pod, nodes, pipeline::ExplainScoring::kPassing, explanation);
  AppendExplanationJson(*profile, args, node_index, explanation, body, "cache");
  cache.Release(snapshot);
  return 200;
}

}  // namespace schedext::explain
