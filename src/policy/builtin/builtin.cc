// RegisterBuiltinPolicies: the one list of built-in policies.
#include "policy/builtin/gpushare/gpushare.h"
#include "policy/builtin/hami_vgpu/hami_vgpu.h"
#include "policy/builtin/node_health/node_health.h"
#include "policy/builtin/node_label/node_label.h"
#include "policy/builtin/node_numeric/node_numeric.h"
#include "policy/builtin/node_resources/allocation_scores.h"
#include "policy/builtin/node_resources/node_resources_fit.h"
#include "policy/builtin/nodeload/nodeload.h"
#include "policy/builtin/taint_toleration/taint_toleration.h"
#include "schedext/policy/registry.h"

namespace schedext::policy {

Status RegisterBuiltinPolicies(Registry& registry) {
  SCHEDEXT_RETURN_IF_ERROR(registry.Register("NodeLabel", NewNodeLabel));
  SCHEDEXT_RETURN_IF_ERROR(registry.Register("TaintToleration", NewTaintToleration));
  SCHEDEXT_RETURN_IF_ERROR(registry.Register("NodeHealth", NewNodeHealth));
  SCHEDEXT_RETURN_IF_ERROR(registry.Register("NodeNumeric", NewNodeNumeric));
  SCHEDEXT_RETURN_IF_ERROR(registry.Register("NodeResourcesFit", NewNodeResourcesFit));
  SCHEDEXT_RETURN_IF_ERROR(registry.Register("LeastAllocated", NewLeastAllocated));
  SCHEDEXT_RETURN_IF_ERROR(registry.Register("MostAllocated", NewMostAllocated));
  SCHEDEXT_RETURN_IF_ERROR(registry.Register("BalancedAllocation", NewBalancedAllocation));
  SCHEDEXT_RETURN_IF_ERROR(
      registry.Register("RequestedToCapacityRatio", NewRequestedToCapacityRatio));
  SCHEDEXT_RETURN_IF_ERROR(registry.Register("GpuShare", NewGpuShare));
  SCHEDEXT_RETURN_IF_ERROR(registry.Register("NodeLoad", NewNodeLoad));
  SCHEDEXT_RETURN_IF_ERROR(registry.Register("HamiVgpu", NewHamiVgpu));
  return OkStatus();
}

}  // namespace schedext::policy
