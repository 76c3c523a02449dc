// Supervisor: the process's one thread beside the server's. It waits for
// SIGTERM / SIGINT — blocked in every other thread (BlockShutdownSignals,
// called before any thread starts), so only this one sees them — and runs the
// periodic work it is given meanwhile. On a signal it calls `on_signal` once
// (stop accepting work) and waits for the owner to destroy it: if that does
// not happen within the grace period (in-flight requests did not drain), it
// exits the process with status 1.
//
// The composition root (main.cc) builds it around the serving call:
//   BlockShutdownSignals(); ... { Supervisor s(options); server.Serve(); }
// Callbacks run on the supervisor's thread, one at a time.
#ifndef SCHEDEXT_SRC_COMMON_SUPERVISOR_H_
#define SCHEDEXT_SRC_COMMON_SUPERVISOR_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace schedext {

struct SupervisorOptions {
  // How long destruction may lag a signal before the process exits.
  std::chrono::seconds grace{30};
  // On the first SIGTERM / SIGINT: make the serving call return.
  std::function<void()> on_signal;
  // Every 200 ms, while no signal came. May be empty.
  std::function<void()> every_tick;
  // Every second, while no signal came; `summary` once a minute (and at the
  // first call), for a periodic log line. May be empty.
  std::function<void(bool summary)> every_second;
};

// Blocks SIGTERM and SIGINT in the calling thread (and the threads it starts
// from now on) and ignores SIGPIPE. Call before starting any thread.
void BlockShutdownSignals();

class Supervisor {
 public:
  // Starts the thread.
  explicit Supervisor(SupervisorOptions options);
  // Stops and joins the thread (the serving call returned).
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

 private:
  void Run();

  const SupervisorOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace schedext

#endif  // SCHEDEXT_SRC_COMMON_SUPERVISOR_H_
