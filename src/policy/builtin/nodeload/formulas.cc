#include "policy/builtin/nodeload/formulas.h"

#include <algorithm>
#include <cmath>

namespace schedext::policy::nodeload {

int64_t TargetLoadPackingScore(double predicted_percent, double target_percent) {
  if (predicted_percent > 100) {
    return 0;
  }
  if (predicted_percent > target_percent) {
    return std::llround(target_percent * (100 - predicted_percent) / (100 - target_percent));
  }
  return std::llround((100 - target_percent) * predicted_percent / target_percent +
                      target_percent);
}

double PredictedCpuPercent(double utilisation_percent, double capacity_millis,
                           double extra_millis) {
  if (!(capacity_millis > 0)) {
    return 0;
  }
  const double used_millis = utilisation_percent / 100 * capacity_millis;
  return 100 * (used_millis + extra_millis) / capacity_millis;
}

int64_t PredictPodCpuMillis(const model::PodInfo& pod, int64_t default_millis,
                            double multiplier) {
  int64_t total = 0;
  for (const model::ContainerResources& c : pod.containers) {
    if (c.limits.milli_cpu > 0) {
      total += c.limits.milli_cpu;
    } else if (c.has_cpu_request) {
      total += std::llround(static_cast<double>(c.requests.milli_cpu) * multiplier);
    } else {
      total += default_millis;
    }
  }
  return total + pod.overhead.milli_cpu;
}

double RiskBalancingScore(const ResourceStats& stats, double margin, double sensitivity) {
  if (!(stats.capacity > 0)) {
    return 0;
  }
  const double capacity = stats.capacity;
  const double request = std::max(stats.request, 0.0);
  const double used_avg = std::clamp(stats.used_avg, 0.0, capacity);
  const double used_stddev = std::clamp(stats.used_stddev, 0.0, capacity);

  const double mu = std::clamp((used_avg + request) / capacity, 0.0, 1.0);
  double sigma = std::clamp(used_stddev / capacity, 0.0, 1.0);
  if (sensitivity > 0) {
    sigma = std::pow(sigma, 1 / sensitivity);
  } else if (sensitivity == 0) {
    // The root of infinite order, as Go's math.Pow(sigma, +Inf) gives it.
    sigma = sigma < 1 ? 0 : 1;
  }
  sigma = std::clamp(sigma * margin, 0.0, 1.0);
  const double risk = (mu + sigma) / 2;
  return (1 - risk) * 100;
}

}  // namespace schedext::policy::nodeload
