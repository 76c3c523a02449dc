#include "policy/builtin/node_resources/resource_args.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/model/resources.h"

namespace schedext::policy {
namespace {

// v1.ResourceDefaultNamespacePrefix and v1.DefaultResourceRequestsPrefix.
constexpr std::string_view kKubernetesIoPrefix = "kubernetes.io/";
constexpr std::string_view kQuotaRequestsPrefix = "requests.";
constexpr std::string_view kHugePagesPrefix = "hugepages-";
constexpr std::string_view kAttachableVolumesPrefix = "attachable-volumes-";

std::string Quoted(std::string_view text) {
  std::string out = "\"";
  out.append(text).append("\"");
  return out;
}

std::string Indexed(std::string_view key, size_t i) {
  return std::string(key) + "[" + std::to_string(i) + "]";
}

// The allocation scorers read these three from dedicated fields; any other
// name is scored only if it is a scalar resource (what kube-scheduler keeps in
// NodeInfo.Allocatable.ScalarResources), so "pods" or a typo never counts.
bool IsScorableResourceName(std::string_view name) {
  return name == model::kResourceCpu || name == model::kResourceMemory ||
         name == model::kResourceEphemeralStorage || IsScalarResourceName(name);
}

}  // namespace

bool IsExtendedResourceName(std::string_view name) {
  return name.find('/') != std::string_view::npos &&
         name.find(kKubernetesIoPrefix) == std::string_view::npos &&
         !name.starts_with(kQuotaRequestsPrefix);
}

bool IsScalarResourceName(std::string_view name) {
  return IsExtendedResourceName(name) || name.starts_with(kHugePagesPrefix) ||
         name.find(kKubernetesIoPrefix) != std::string_view::npos ||
         name.starts_with(kAttachableVolumesPrefix);
}

StatusOr<std::vector<ResourceWeight>> ReadResourceWeights(const ArgsReader& reader,
                                                          WeightRule rule) {
  constexpr std::string_view kKey = "resources";
  if (!reader.Has(kKey)) {
    return std::vector<ResourceWeight>{{std::string(model::kResourceCpu), 1},
                                       {std::string(model::kResourceMemory), 1}};
  }
  SCHEDEXT_ASSIGN_OR_RETURN(std::vector<ArgsReader> entries,
                            reader.ObjectList(kKey, {"name", "weight"}));
  if (entries.empty()) {
    // kube-scheduler would fall back to the default silently; an explicit
    // empty list is more likely a mistake than a request for the default.
    return reader.FieldError(kKey, "must not be empty (omit it for cpu and memory, weight 1)");
  }
  std::vector<ResourceWeight> out;
  out.reserve(entries.size());
  for (const ArgsReader& entry : entries) {
    ResourceWeight resource;
    SCHEDEXT_ASSIGN_OR_RETURN(resource.name, entry.RequiredString("name"));
    if (std::optional<std::string> error = QualifiedNameError(resource.name)) {
      return entry.FieldError("name",
                              "invalid resource name " + Quoted(resource.name) + ": " + *error);
    }
    if (!IsScorableResourceName(resource.name)) {
      return entry.FieldError(
          "name", Quoted(resource.name) +
                      " cannot be scored: use cpu, memory, ephemeral-storage, "
                      "hugepages-<size> or an extended resource such as example.com/gpu");
    }
    for (const ResourceWeight& seen : out) {
      if (seen.name == resource.name) {
        return entry.FieldError("name", "duplicate resource " + Quoted(resource.name));
      }
    }
    if (rule == WeightRule::kMustBeOne) {
      SCHEDEXT_ASSIGN_OR_RETURN(std::optional<int64_t> weight,
                                entry.Int("weight", std::numeric_limits<int64_t>::min(),
                                          std::numeric_limits<int64_t>::max()));
      if (weight.has_value() && *weight != 1) {
        return entry.FieldError("weight",
                                "must be 1 (BalancedAllocation does not weight resources)");
      }
    } else {
      // kube-scheduler's validateResources range, (0, 100].
      SCHEDEXT_ASSIGN_OR_RETURN(std::optional<int64_t> weight, entry.Int("weight", 1, 100));
      resource.weight = weight.value_or(1);
    }
    out.push_back(std::move(resource));
  }
  return out;
}

bool IgnoredResources::Ignores(std::string_view resource) const {
  if (!IsExtendedResourceName(resource)) {
    return false;
  }
  for (const std::string& name : names) {
    if (name == resource) {
      return true;
    }
  }
  if (!groups.empty()) {
    // An extended resource name always has a '/' (checked above).
    const std::string_view prefix = resource.substr(0, resource.find('/'));
    for (const std::string& group : groups) {
      if (group == prefix) {
        return true;
      }
    }
  }
  return false;
}

StatusOr<IgnoredResources> ReadIgnoredResources(const ArgsReader& reader) {
  IgnoredResources out;
  SCHEDEXT_ASSIGN_OR_RETURN(out.names, reader.StringList("ignoredResources"));
  for (size_t i = 0; i < out.names.size(); ++i) {
    const std::string& name = out.names[i];
    const std::string key = Indexed("ignoredResources", i);
    if (std::optional<std::string> error = QualifiedNameError(name)) {
      return reader.FieldError(key, "invalid resource name " + Quoted(name) + ": " + *error);
    }
    if (!IsExtendedResourceName(name)) {
      return reader.FieldError(key, Quoted(name) +
                                        " is not an extended resource (a prefixed name outside "
                                        "kubernetes.io); only extended resources can be ignored");
    }
  }
  SCHEDEXT_ASSIGN_OR_RETURN(out.groups, reader.StringList("ignoredResourceGroups"));
  for (size_t i = 0; i < out.groups.size(); ++i) {
    const std::string& group = out.groups[i];
    const std::string key = Indexed("ignoredResourceGroups", i);
    if (group.find('/') != std::string::npos) {
      return reader.FieldError(key,
                               "must not contain '/': a group is the prefix of extended "
                               "resource names (\"example.com\" for example.com/gpu)");
    }
    if (std::optional<std::string> error = QualifiedNameError(group)) {
      return reader.FieldError(key, "invalid resource group " + Quoted(group) + ": " + *error);
    }
    if (!IsExtendedResourceName(group + "/x")) {
      return reader.FieldError(key, Quoted(group) +
                                        " cannot match an extended resource (kubernetes.io names "
                                        "are never ignored)");
    }
  }
  return out;
}

StatusOr<std::vector<ShapePoint>> ReadShape(const ArgsReader& reader) {
  constexpr std::string_view kKey = "shape";
  if (!reader.Has(kKey)) {
    return reader.FieldError(kKey, "required");
  }
  SCHEDEXT_ASSIGN_OR_RETURN(std::vector<ArgsReader> entries,
                            reader.ObjectList(kKey, {"utilization", "score"}));
  if (entries.empty()) {
    return reader.FieldError(kKey, "must have at least one point");
  }
  std::vector<ShapePoint> out;
  out.reserve(entries.size());
  for (const ArgsReader& entry : entries) {
    SCHEDEXT_ASSIGN_OR_RETURN(std::optional<int64_t> utilization, entry.Int("utilization", 0, 100));
    if (!utilization.has_value()) {
      return entry.FieldError("utilization", "required");
    }
    SCHEDEXT_ASSIGN_OR_RETURN(std::optional<int64_t> score, entry.Int("score", 0, 10));
    if (!score.has_value()) {
      return entry.FieldError("score", "required");
    }
    if (!out.empty() && *utilization <= out.back().utilization) {
      // The broken-line function divides by the utilization step.
      return entry.FieldError("utilization", "must be greater than the previous point's (" +
                                                 std::to_string(*utilization) + " <= " +
                                                 std::to_string(out.back().utilization) + ")");
    }
    out.push_back({*utilization, *score});
  }
  return out;
}

}  // namespace schedext::policy
