#include "schedext/model/node_info.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace schedext::model {
namespace {

// The ConditionBit of `type`, or 0 for a type no policy checks.
uint8_t BitOf(std::string_view type) {
  // The five names differ in length, so the length picks the one candidate.
  switch (type.size()) {
    case 5:
      return type == "Ready" ? kConditionReady : 0;
    case 14:
      return type == "MemoryPressure" ? kConditionMemoryPressure : 0;
    case 12:
      return type == "DiskPressure" ? kConditionDiskPressure : 0;
    case 11:
      return type == "PIDPressure" ? kConditionPidPressure : 0;
    case 18:
      return type == "NetworkUnavailable" ? kConditionNetworkUnavailable : 0;
    default:
      return 0;
  }
}

}  // namespace

ConditionSummary SummarizeConditions(std::span<const NodeCondition> conditions) {
  ConditionSummary summary;
  for (const NodeCondition& condition : conditions) {
    const uint8_t bit = BitOf(condition.type);
    if (bit == 0 || (summary.reported & bit) != 0) {
      continue;
    }
    summary.reported |= bit;
    if (condition.status == "True") {
      summary.is_true |= bit;
    }
  }
  return summary;
}

std::optional<std::string_view> NodeInfo::ConditionStatus(std::string_view type) const {
  // The kubelet reports each type once; should a body repeat one, the first wins.
  for (const NodeCondition& condition : conditions) {
    if (condition.type == type) {
      return condition.status;
    }
  }
  return std::nullopt;
}

void NodeInfo::Clear() {
  name = {};
  uid = {};
  labels.Clear();
  annotations.Clear();
  taints.clear();
  unschedulable = false;
  condition_summary = {};
  conditions.clear();
  capacity.Clear();
  allocatable.Clear();
  raw_json = {};
  usage = nullptr;
  summarized_usage = nullptr;
}

}  // namespace schedext::model
