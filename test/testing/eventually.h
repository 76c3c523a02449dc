// Eventually: waits for a condition another thread makes true (an informer
// syncing, a watch event landing in the cache). The timeout is a liveness
// bound for a loaded machine, never a speed assertion.
#ifndef SCHEDEXT_TEST_TESTING_EVENTUALLY_H_
#define SCHEDEXT_TEST_TESTING_EVENTUALLY_H_

#include <chrono>
#include <thread>

namespace schedext::testing {

// Polls `condition` every `every` (5 ms; more for a condition that costs a
// round trip) until it holds (true) or `timeout` passes (false, after one
// last check).
template <typename Fn>
bool Eventually(Fn&& condition,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(15000),
                std::chrono::milliseconds every = std::chrono::milliseconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) {
      return true;
    }
    std::this_thread::sleep_for(every);
  }
  return condition();
}

}  // namespace schedext::testing

#endif  // SCHEDEXT_TEST_TESTING_EVENTUALLY_H_
