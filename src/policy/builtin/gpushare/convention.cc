#include "policy/builtin/gpushare/convention.h"

#include <algorithm>
#include <charconv>

#include "common/text.h"

namespace schedext::policy::gpushare {
namespace {

// A device index as strconv.Atoi reads it, limited to [0, kMaxGpuDevices).
std::optional<int> ParseIndex(std::string_view text) {
  if (!text.empty() && text.front() == '+') {
    text.remove_prefix(1);
  }
  int value = -1;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 0 || value >= kMaxGpuDevices) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

int64_t GpuMemoryRequest(const PodInfo& pod, const GpuShareConvention& convention) {
  return std::max<int64_t>(0, pod.limits.Get(convention.memory_resource));
}

std::optional<int> GpuDeviceIndex(const PodInfo& pod, const GpuShareConvention& convention) {
  const std::optional<std::string_view> value = pod.annotations.Find(convention.index_annotation);
  return value.has_value() ? ParseIndex(*value) : std::nullopt;
}

GpuShape NodeGpuShape(const NodeInfo& node, const GpuShareConvention& convention) {
  return NodeGpuShape(node, GpuResourceNames::Of(convention, nullptr));
}

GpuShape NodeGpuShape(const NodeInfo& node, const GpuResourceNames& names) {
  const model::ResourceList& capacity = node.capacity;
  int64_t count = 0;
  int64_t memory = 0;
  if (names.count.ComparableIn(capacity.ids_from()) &&
      names.memory.ComparableIn(capacity.ids_from()) && names.count.id > model::kPodsNameId &&
      names.memory.id > model::kPodsNameId && names.count.id != names.memory.id) {
    // Both extended resources in one pass over the scalars, each the first
    // entry with its id, as ResourceList::Get finds it.
    bool found_count = false;
    bool found_memory = false;
    for (const model::ScalarResource& s : capacity.scalars) {
      if (s.id == names.count.id && !found_count) {
        count = s.amount;
        found_count = true;
      } else if (s.id == names.memory.id && !found_memory) {
        memory = s.amount;
        found_memory = true;
      }
      if (found_count && found_memory) {
        break;  // the later scalars' cache lines need not be loaded
      }
    }
  } else {
    count = capacity.Get(names.count);
    memory = capacity.Get(names.memory);
  }
  GpuShape shape;
  shape.count = static_cast<int>(std::clamp<int64_t>(count, 0, kMaxGpuDevices));
  shape.total_memory = std::max<int64_t>(0, memory);
  shape.device_memory = shape.count > 0 ? shape.total_memory / shape.count : 0;
  return shape;
}

uint64_t ParseUnhealthyDevices(std::string_view text, int* invalid) {
  uint64_t mask = 0;
  int bad = 0;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view entry = TrimBlanks(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (entry.empty()) {
      continue;
    }
    if (const std::optional<int> index = ParseIndex(entry)) {
      mask |= uint64_t{1} << *index;
    } else {
      ++bad;
    }
  }
  if (invalid != nullptr) {
    *invalid = bad;
  }
  return mask;
}

std::optional<std::string_view> UnhealthyConfigMapNode(std::string_view namespace_name,
                                                       std::string_view name,
                                                       const GpuShareConvention& convention) {
  if (namespace_name != convention.unhealthy_namespace ||
      !name.starts_with(convention.unhealthy_prefix) ||
      name.size() == convention.unhealthy_prefix.size()) {
    return std::nullopt;
  }
  return name.substr(convention.unhealthy_prefix.size());
}

}  // namespace schedext::policy::gpushare
