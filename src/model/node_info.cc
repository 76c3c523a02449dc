#include "schedext/model/node_info.h"

#include <optional>
#include <string_view>

namespace schedext::model {

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
  conditions.clear();
  capacity.Clear();
  allocatable.Clear();
  raw_json = {};
  usage = nullptr;
}

}  // namespace schedext::model
