#include "server/blocking_pool.h"

#include <utility>

namespace schedext::server {

BlockingPool::BlockingPool(int threads, size_t max_pending) : max_pending_(max_pending) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this] { Run(); });
  }
}

BlockingPool::~BlockingPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    t.join();
  }
}

bool BlockingPool::TryPost(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (jobs_.size() >= max_pending_) {
      return false;
    }
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

void BlockingPool::Run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) {
        return;  // stopping, and nothing left to run
      }
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace schedext::server
