#include "schedext/policy/policy.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <utility>

#include "schedext/policy/request_state.h"

namespace schedext::policy {
namespace {

// Products such as kMaxNodeScore * score can exceed int64 for extreme raw
// scores; compute them in 128 bits.
__extension__ typedef __int128 Int128;

}  // namespace

void RequestState::Set(const void* owner, std::unique_ptr<StateData> data) {
  for (auto& slot : slots_) {
    if (slot.first == owner) {
      slot.second = std::move(data);
      return;
    }
  }
  slots_.emplace_back(owner, std::move(data));
}

void ScoreHook::ScoreNodes(const RequestState& state, const model::PodInfo& pod, NodeSpan nodes,
                           std::span<int64_t> out) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    out[i] = Score(state, pod, *nodes[i]);
  }
}

void ScoreHook::Normalize(const RequestState& /*state*/, std::span<int64_t> scores) const {
  for (int64_t& score : scores) {
    score = std::clamp<int64_t>(score, 0, kMaxNodeScore);
  }
}

void NormalizeToMax(std::span<int64_t> scores, bool reverse) {
  int64_t max = 0;
  for (int64_t& score : scores) {
    score = std::max<int64_t>(score, 0);
    max = std::max(max, score);
  }
  if (max == 0) {
    // Every score is 0: unchanged, or all kMaxNodeScore when reversed.
    if (reverse) {
      std::fill(scores.begin(), scores.end(), kMaxNodeScore);
    }
    return;
  }
  // 0 <= score <= max here, so kMaxNodeScore * score / max needs 128 bits
  // only when kMaxNodeScore * max does not fit in 64 (or 32) bits; below that
  // the narrower unsigned division gives the same quotient, and __divti3 was
  // the loop's largest cost.
  const auto umax = static_cast<uint64_t>(max);
  if (umax <= std::numeric_limits<uint32_t>::max() / kMaxNodeScore) {
    const auto divisor = static_cast<uint32_t>(umax);
    for (int64_t& score : scores) {
      const auto scaled =
          static_cast<int64_t>(static_cast<uint32_t>(kMaxNodeScore * score) / divisor);
      score = reverse ? kMaxNodeScore - scaled : scaled;
    }
  } else if (umax <= std::numeric_limits<uint64_t>::max() / kMaxNodeScore) {
    for (int64_t& score : scores) {
      const auto scaled = static_cast<int64_t>(
          static_cast<uint64_t>(kMaxNodeScore) * static_cast<uint64_t>(score) / umax);
      score = reverse ? kMaxNodeScore - scaled : scaled;
    }
  } else {
    for (int64_t& score : scores) {
      auto scaled = static_cast<int64_t>(Int128{kMaxNodeScore} * score / max);
      score = reverse ? kMaxNodeScore - scaled : scaled;
    }
  }
}

void NormalizeMinMax(std::span<int64_t> scores, bool reverse) {
  if (scores.empty()) {
    return;
  }
  auto [min_it, max_it] = std::minmax_element(scores.begin(), scores.end());
  const int64_t min = *min_it;
  const int64_t max = *max_it;
  if (min == max) {
    std::fill(scores.begin(), scores.end(), kMaxNodeScore);
    return;
  }
  // The distance from the worst end, scaled down (floor) onto [0,
  // kMaxNodeScore]. 0 <= distance <= range, and range < 2^64 (max - min of
  // two int64), so in unsigned arithmetic the differences are exact (modulo
  // 2^64 they equal the true, non-negative values) and the product needs more
  // than 64 (or 32) bits only when kMaxNodeScore * range does: the narrower
  // division then gives the same quotient as the 128-bit one.
  const uint64_t umin = static_cast<uint64_t>(min);
  const uint64_t umax = static_cast<uint64_t>(max);
  const uint64_t range = umax - umin;
  if (range <= std::numeric_limits<uint32_t>::max() / kMaxNodeScore) {
    const auto divisor = static_cast<uint32_t>(range);
    for (int64_t& score : scores) {
      const auto distance = static_cast<uint32_t>(reverse ? umax - static_cast<uint64_t>(score)
                                                          : static_cast<uint64_t>(score) - umin);
      score = static_cast<int64_t>(static_cast<uint32_t>(distance * kMaxNodeScore) / divisor);
    }
  } else if (range <= std::numeric_limits<uint64_t>::max() / kMaxNodeScore) {
    for (int64_t& score : scores) {
      const uint64_t distance =
          reverse ? umax - static_cast<uint64_t>(score) : static_cast<uint64_t>(score) - umin;
      score = static_cast<int64_t>(distance * kMaxNodeScore / range);
    }
  } else {
    const Int128 wide_range = Int128{max} - min;
    for (int64_t& score : scores) {
      Int128 distance = reverse ? Int128{max} - score : Int128{score} - min;
      score = static_cast<int64_t>(distance * kMaxNodeScore / wide_range);
    }
  }
}

}  // namespace schedext::policy
