#include "common/stats.h"

#include <algorithm>

namespace schedext {

size_t PercentileIndex(size_t count, double p) {
  // The rank is p × count rounded up; the margin keeps a product that lands a
  // rounding error above a whole number (0.07 × 100 is 7.000000000000001) on that number.
  const auto rank = static_cast<size_t>(p * static_cast<double>(count) + 0.999999);
  return std::clamp<size_t>(rank, 1, count) - 1;
}

}  // namespace schedext
