#include "cluster/token_bucket.h"

#include <algorithm>

namespace schedext::cluster {

TokenBucket::TokenBucket(double qps, int burst)
    : qps_(qps), burst_(burst), tokens_(static_cast<double>(burst)), last_(Clock::now()) {}

void TokenBucket::Refill(Clock::time_point now) {
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(static_cast<double>(burst_), tokens_ + elapsed * qps_);
  last_ = now;
}

bool TokenBucket::Wait(const std::atomic<bool>* cancelled) {
  if (!enabled()) {
    return true;
  }
  std::unique_lock<std::mutex> lock(mu_);
  const Clock::time_point now = Clock::now();
  Refill(now);
  tokens_ -= 1.0;
  if (tokens_ >= 0) {
    return true;
  }
  const auto wait = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(-tokens_ / qps_));
  cv_.wait_until(lock, now + wait, [&] { return cancelled != nullptr && cancelled->load(); });
  return cancelled == nullptr || !cancelled->load();
}

bool TokenBucket::WaitUntil(Clock::time_point not_after) {
  const Clock::time_point now = Clock::now();
  if (!enabled()) {
    return now <= not_after;
  }
  std::unique_lock<std::mutex> lock(mu_);
  Refill(now);
  const double after = tokens_ - 1.0;
  const Clock::time_point due =
      after >= 0 ? now
                 : now + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(-after / qps_));
  if (due > not_after) {
    return false;
  }
  tokens_ = after;
  if (due > now) {
    // Nobody wakes this wait early: the token is reserved, so it is used.
    cv_.wait_until(lock, due, [] { return false; });
  }
  return true;
}

void TokenBucket::Wake() {
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

}  // namespace schedext::cluster
