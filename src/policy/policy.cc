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
  for (int64_t& score : scores) {
    auto scaled = static_cast<int64_t>(Int128{kMaxNodeScore} * score / max);
    score = reverse ? kMaxNodeScore - scaled : scaled;
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
  const Int128 range = Int128{max} - min;
  for (int64_t& score : scores) {
    // Distance from the worst end, scaled down (floor) onto [0, kMaxNodeScore].
    Int128 distance = reverse ? Int128{max} - score : Int128{score} - min;
    score = static_cast<int64_t>(distance * kMaxNodeScore / range);
  }
}

}  // namespace schedext::policy
