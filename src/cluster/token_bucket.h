// The API client's rate limiter: golang.org/x/time/rate's reservation model,
// as client-go's NewTokenBucketRateLimiter uses it — `burst` tokens at start,
// `qps` refilled per second, a caller takes one token, and when none is left
// it reserves the next one (the count goes negative) and waits until its time.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace schedext::cluster {

class TokenBucket {
 public:
  // qps <= 0: no limit.
  TokenBucket(double qps, int burst);

  bool enabled() const { return qps_ > 0; }

  // Waits for a token. Returns early (false) when `cancelled` becomes true
  // and Wake() is called.
  bool Wait(const std::atomic<bool>* cancelled);
  void Wake();

 private:
  using Clock = std::chrono::steady_clock;

  const double qps_;
  const int burst_;
  std::mutex mu_;
  std::condition_variable cv_;
  double tokens_;
  Clock::time_point last_;
};

}  // namespace schedext::cluster
