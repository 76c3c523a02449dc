// Arguments and resource-name rules shared by the resource policies
// (NodeResourcesFit and the allocation scorers). Internal to the policy layer:
// the policy headers beside this one export only factories.
//
// The args each policy accepts (JSON objects; unknown keys are errors):
//   resources:             [{name, weight}]; absent ⇒ [{cpu, 1}, {memory, 1}].
//                          name: cpu, memory, ephemeral-storage, hugepages-<size>
//                          or a prefixed (extended) resource; no duplicates.
//                          weight: integer 1..100, default 1 (kube-scheduler's
//                          range; BalancedAllocation accepts only 1).
//   ignoredResources:      [names]; extended resources NodeResourcesFit skips.
//   ignoredResourceGroups: [prefixes]; every extended resource "<prefix>/..."
//                          is skipped.
//   shape:                 [{utilization: 0..100, score: 0..10}], utilization
//                          strictly increasing (RequestedToCapacityRatio).
// Errors are kInvalidArgument naming the field, e.g.
//   profiles[0].policies[1].args.resources[2].weight: must be between 1 and 100
//
// Thread-safety: plain values and pure functions.
#ifndef SCHEDEXT_POLICY_BUILTIN_NODE_RESOURCES_RESOURCE_ARGS_H_
#define SCHEDEXT_POLICY_BUILTIN_NODE_RESOURCES_RESOURCE_ARGS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "policy/args.h"
#include "schedext/status.h"

namespace schedext::policy {

// v1helper.IsExtendedResourceName: a prefixed name ("example.com/gpu") that is
// neither in the kubernetes.io namespace nor a quota name ("requests.*").
// The API server has already checked that names are well formed.
bool IsExtendedResourceName(std::string_view name);

// schedutil.IsScalarResourceName: extended, hugepages-*, kubernetes.io-prefixed
// or attachable-volumes-* names; everything except cpu, memory,
// ephemeral-storage, pods and other unprefixed names.
bool IsScalarResourceName(std::string_view name);

// One entry of `resources`.
struct ResourceWeight {
  std::string name;
  int64_t weight = 1;
};

enum class WeightRule {
  kOneToHundred,  // LeastAllocated, MostAllocated, RequestedToCapacityRatio
  kMustBeOne,     // BalancedAllocation: kube-scheduler ignores the weights there
};

// Reads `resources` from `reader` (whose known keys must include it).
StatusOr<std::vector<ResourceWeight>> ReadResourceWeights(const ArgsReader& reader,
                                                          WeightRule rule);

// ignoredResources and ignoredResourceGroups.
struct IgnoredResources {
  std::vector<std::string> names;
  std::vector<std::string> groups;

  // Whether NodeResourcesFit skips `resource`: only extended resources can be
  // skipped, by exact name or by the prefix before their '/'.
  bool Ignores(std::string_view resource) const;
};

// Reads both lists. Each entry must be able to match an extended resource, so
// a configuration that could never take effect ("hugepages-2Mi",
// "kubernetes.io") is refused rather than silently ignored.
StatusOr<IgnoredResources> ReadIgnoredResources(const ArgsReader& reader);

// A point of RequestedToCapacityRatio's shape, as configured (score 0..10).
struct ShapePoint {
  int64_t utilization = 0;
  int64_t score = 0;
};

// Reads `shape`: required, non-empty, utilization strictly increasing.
StatusOr<std::vector<ShapePoint>> ReadShape(const ArgsReader& reader);

}  // namespace schedext::policy

#endif  // SCHEDEXT_POLICY_BUILTIN_NODE_RESOURCES_RESOURCE_ARGS_H_
