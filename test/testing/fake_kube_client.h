// FakeKubeClient: a scripted KubeClient for informer unit tests.
//
// Get() answers the scripted replies in order; Watch() plays the scripted
// sessions in order (each: lines, then an end Status, optionally held open
// until Release() or CancelWatches()). With nothing scripted, Get and Watch
// block until something is pushed or CancelWatches() is called, so an informer
// under test never spins. Every request path is recorded.
//
// Thread-safety: every method may be called from any thread.
#ifndef SCHEDEXT_TEST_TESTING_FAKE_KUBE_CLIENT_H_
#define SCHEDEXT_TEST_TESTING_FAKE_KUBE_CLIENT_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedext/cluster/kube_client.h"
#include "schedext/status.h"

namespace schedext::testing {

class FakeKubeClient final : public cluster::KubeClient {
 public:
  struct WatchSession {
    std::vector<std::string> lines;
    Status end;              // what Watch returns after the lines
    bool hold_open = false;  // after the lines, wait for Release() / CancelWatches()
  };

  void PushGet(StatusOr<cluster::HttpResult> reply) {
    std::lock_guard<std::mutex> lock(mu_);
    gets_.push_back(std::move(reply));
    cv_.notify_all();
  }
  void PushGet(int status, std::string body) {
    PushGet(StatusOr<cluster::HttpResult>(cluster::HttpResult{status, std::move(body)}));
  }
  void PushWatch(WatchSession session) {
    std::lock_guard<std::mutex> lock(mu_);
    watches_.push_back(std::move(session));
    cv_.notify_all();
  }
  // Ends the currently held-open watch session (as a server timeout would).
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    ++releases_;
    cv_.notify_all();
  }

  std::vector<std::string> get_paths() const {
    std::lock_guard<std::mutex> lock(mu_);
    return get_paths_;
  }
  std::vector<std::string> watch_paths() const {
    std::lock_guard<std::mutex> lock(mu_);
    return watch_paths_;
  }
  // Waits until `n` Get calls have started.
  bool WaitForGetCalls(size_t n, std::chrono::milliseconds timeout) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return get_paths_.size() >= n; });
  }
  // Waits until `n` Watch calls have started (and are waiting or playing).
  bool WaitForWatchCalls(size_t n, std::chrono::milliseconds timeout) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return watch_paths_.size() >= n; });
  }

  // ---- KubeClient ----

  StatusOr<cluster::HttpResult> Get(std::string_view path_and_query) override {
    std::unique_lock<std::mutex> lock(mu_);
    get_paths_.emplace_back(path_and_query);
    cv_.notify_all();
    cv_.wait(lock, [&] { return !gets_.empty() || cancelled_; });
    if (gets_.empty()) {
      return UnavailableError("fake: cancelled");
    }
    StatusOr<cluster::HttpResult> reply = std::move(gets_.front());
    gets_.pop_front();
    return reply;
  }
  StatusOr<cluster::HttpResult> Post(std::string_view, std::string_view) override {
    return UnavailableError("fake: POST not scripted");
  }
  StatusOr<cluster::HttpResult> Patch(std::string_view, std::string_view,
                                      std::string_view) override {
    return UnavailableError("fake: PATCH not scripted");
  }
  Status Watch(std::string_view path_and_query,
               const std::function<bool(std::string_view event)>& on_event) override {
    WatchSession session;
    int releases_at_start = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      watch_paths_.emplace_back(path_and_query);
      cv_.notify_all();
      cv_.wait(lock, [&] { return !watches_.empty() || cancelled_; });
      if (cancelled_) {
        return OkStatus();
      }
      session = std::move(watches_.front());
      watches_.pop_front();
      releases_at_start = releases_;
    }
    for (const std::string& line : session.lines) {
      if (!on_event(line)) {
        return OkStatus();
      }
    }
    if (session.hold_open) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return releases_ != releases_at_start || cancelled_; });
    }
    return session.end;
  }
  void CancelWatches() override {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::deque<StatusOr<cluster::HttpResult>> gets_;  // guarded by mu_
  std::deque<WatchSession> watches_;                // guarded by mu_
  std::vector<std::string> get_paths_;              // guarded by mu_
  std::vector<std::string> watch_paths_;            // guarded by mu_
  int releases_ = 0;                                // guarded by mu_
  bool cancelled_ = false;                          // guarded by mu_
};

}  // namespace schedext::testing

#endif  // SCHEDEXT_TEST_TESTING_FAKE_KUBE_CLIENT_H_
