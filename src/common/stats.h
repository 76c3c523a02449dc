// Summary statistics of measured samples, written once for the replay report
// (record/) and the benchmark drivers (bench/).
#pragma once

#include <cstddef>
#include <vector>

namespace schedext {

// The index, in an ascending sequence of `count` values, of its p-th quantile
// by nearest rank: the smallest value with at least p × count values at or
// below it (p in [0, 1]; p = 0 gives the first). `count` must be above zero.
size_t PercentileIndex(size_t count, double p);

// The p-th quantile (nearest rank, as PercentileIndex) of `sorted`, which
// must be in ascending order; T{} when it is empty.
template <typename T>
T Percentile(const std::vector<T>& sorted, double p) {
  return sorted.empty() ? T{} : sorted[PercentileIndex(sorted.size(), p)];
}

}  // namespace schedext
