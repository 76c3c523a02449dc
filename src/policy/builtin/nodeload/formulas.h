// NodeLoad's arithmetic: the two scoring functions of the scheduler-plugins
// project's Trimaran plugins (TargetLoadPacking, LoadVariationRiskBalancing)
// and Trimaran's prediction of a pod's CPU use, as pure functions.
//
// Percentages are 0..100; CPU amounts are milli-cores, memory amounts bytes.
// Nothing here allocates, locks or fails. Thread-safety: pure functions.
#ifndef SCHEDEXT_POLICY_BUILTIN_NODELOAD_FORMULAS_H_
#define SCHEDEXT_POLICY_BUILTIN_NODELOAD_FORMULAS_H_

#include <cstdint>

#include "schedext/model/pod_info.h"

namespace schedext::policy::nodeload {

// Trimaran's defaults (apis/config/v1): TargetLoadPacking aims at 40 % CPU,
// counts 1 core for a container without CPU request or limit, and a
// container with a request but no limit at 1.5 × its request;
// LoadVariationRiskBalancing's margin and sensitivity are 1.
inline constexpr double kDefaultTargetUtilization = 40;
inline constexpr int64_t kDefaultCpuRequestMillis = 1000;
inline constexpr double kDefaultRequestsMultiplier = 1.5;
inline constexpr double kDefaultSafeVarianceMargin = 1;
inline constexpr double kDefaultSafeVarianceSensitivity = 1;

// TargetLoadPacking's score of a node whose CPU would be at
// `predicted_percent` with the pod on it (best fit around the target):
//   predicted > 100           → 0
//   predicted > target        → round(target × (100 − predicted) / (100 − target))
//   otherwise                 → round((100 − target) × predicted / target + target)
// A node at the target scores 100, an idle node `target`. `target_percent`
// must lie in (0, 100).
int64_t TargetLoadPackingScore(double predicted_percent, double target_percent);

// 100 × (used + extra) / capacity, where used = utilisation_percent % of
// `capacity_millis`; 0 when the capacity is not positive (as Trimaran).
double PredictedCpuPercent(double utilisation_percent, double capacity_millis,
                           double extra_millis);

// Trimaran's PredictUtilisation summed over the pod's regular containers,
// plus the pod's CPU overhead: per container its CPU limit when set, else
// round(request × `multiplier`) when it requests CPU, else `default_millis`.
int64_t PredictPodCpuMillis(const model::PodInfo& pod, int64_t default_millis,
                            double multiplier);

// One resource of a node for LoadVariationRiskBalancing, in one unit.
struct ResourceStats {
  double capacity = 0;     // the node's allocatable amount
  double request = 0;      // what the pod to place requests
  double used_avg = 0;     // measured average use (absolute)
  double used_stddev = 0;  // measured standard deviation of the use (absolute)
};

// LoadVariationRiskBalancing's score of one resource, unrounded, in
// [0, 100]:
//   mu    = clamp((clamp(avg, 0, cap) + max(req, 0)) / cap, 0, 1)
//   sigma = clamp(clamp(stddev, 0, cap) / cap, 0, 1) ^ (1 / sensitivity)
//           (the power only when sensitivity >= 0), then × margin, clamped
//   score = (1 − (mu + sigma) / 2) × 100
// A capacity <= 0 scores 0.
double RiskBalancingScore(const ResourceStats& stats, double margin, double sensitivity);

}  // namespace schedext::policy::nodeload

#endif  // SCHEDEXT_POLICY_BUILTIN_NODELOAD_FORMULAS_H_
