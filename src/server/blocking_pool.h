// BlockingPool: a fixed set of threads for work that may block for seconds
// (bind: a call to the Kubernetes API), so that it never runs on, or delays,
// the listener's I/O threads. Bounded: beyond `max_pending` queued jobs,
// TryPost refuses, and the caller answers at once instead of queueing without
// limit behind a slow API server.
//
// Thread-safety: TryPost from any thread. The destructor runs the jobs still
// queued, then joins.
#ifndef SCHEDEXT_SRC_SERVER_BLOCKING_POOL_H_
#define SCHEDEXT_SRC_SERVER_BLOCKING_POOL_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace schedext::server {

class BlockingPool {
 public:
  BlockingPool(int threads, size_t max_pending);
  ~BlockingPool();
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  // Queues `job`; false (and `job` dropped) when max_pending jobs wait already.
  bool TryPost(std::function<void()> job);

 private:
  void Run();

  const size_t max_pending_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace schedext::server

#endif  // SCHEDEXT_SRC_SERVER_BLOCKING_POOL_H_
