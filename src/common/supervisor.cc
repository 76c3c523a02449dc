// Supervisor: signals, periodic work and the shutdown grace period. See
// supervisor.h.
#include "common/supervisor.h"

#include <signal.h>
#include <time.h>

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <utility>

namespace schedext {
namespace {

sigset_t ShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

void BlockShutdownSignals() {
  const sigset_t set = ShutdownSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

Supervisor::Supervisor(SupervisorOptions options)
    : options_(std::move(options)), thread_([this] { Run(); }) {}

Supervisor::~Supervisor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Supervisor::Run() {
  const sigset_t set = ShutdownSignals();
  const timespec tick{0, 200'000'000};
  auto next_second = std::chrono::steady_clock::now();
  auto next_summary = next_second;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (done_) {
        return;
      }
    }
    const int sig = sigtimedwait(&set, nullptr, &tick);
    if (sig == SIGTERM || sig == SIGINT) {
      spdlog::info("received {}: draining in-flight requests",
                   sig == SIGTERM ? "SIGTERM" : "SIGINT");
      if (options_.on_signal) {
        options_.on_signal();
      }
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_for(lock, options_.grace, [this] { return done_; })) {
        spdlog::error("requests did not drain within {} s; exiting", options_.grace.count());
        spdlog::shutdown();
        std::_Exit(1);
      }
      return;
    }
    if (options_.every_tick) {
      options_.every_tick();
    }
    const auto now = std::chrono::steady_clock::now();
    if (options_.every_second && now >= next_second) {
      next_second = now + std::chrono::seconds(1);
      const bool summary = now >= next_summary;
      if (summary) {
        next_summary = now + std::chrono::seconds(60);
      }
      options_.every_second(summary);
    }
  }
}

}  // namespace schedext
