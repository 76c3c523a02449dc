// The API client's rate limiter: golang.org/x/time/rate's reservation model,
// as client-go's NewTokenBucketRateLimiter uses it — `burst` tokens at start,
// `qps` refilled per second, a caller takes one token, and when none is left
// it reserves the next one (the count goes negative) and waits until its time.
//
// Called by HttpKubeClient before every request, from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace schedext::cluster {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  // qps <= 0: no limit.
  TokenBucket(double qps, int burst);

  bool enabled() const { return qps_ > 0; }

  // Waits for a token. Returns early (false) when `cancelled` becomes true
  // and Wake() is called.
  bool Wait(const std::atomic<bool>* cancelled);
  // Takes a token only if its time comes by `not_after`, and waits for it;
  // otherwise takes nothing and returns false at once. A bind whose caller
  // (kube-scheduler) has given up by then must not queue at all: waiting would
  // only delay the binds behind it past their deadlines too.
  bool WaitUntil(Clock::time_point not_after);
  void Wake();

 private:
  // Refills for the time since the last call; mu_ held.
  void Refill(Clock::time_point now);

  const double qps_;
  const int burst_;
  std::mutex mu_;
  std::condition_variable cv_;
  double tokens_;
  Clock::time_point last_;
};

}  // namespace schedext::cluster
