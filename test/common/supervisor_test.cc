#include "common/supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <utility>

#include "testing/eventually.h"

namespace schedext {
namespace {

using std::chrono::seconds;

// The periodic work runs while no signal comes: a summary at the first
// second-tick, then plain ticks; nothing after destruction.
TEST(SupervisorTest, RunsThePeriodicWorkUntilDestroyed) {
  BlockShutdownSignals();
  std::atomic<int> ticks{0};
  std::atomic<int> seconds_called{0};
  std::atomic<int> summaries{0};
  std::atomic<int> signals{0};
  {
    SupervisorOptions options;
    options.on_signal = [&] { ++signals; };
    options.every_tick = [&] { ++ticks; };
    options.every_second = [&](bool summary) {
      ++seconds_called;
      summaries += summary ? 1 : 0;
    };
    Supervisor supervisor(std::move(options));
    ASSERT_TRUE(testing::Eventually([&] { return seconds_called.load() >= 2; }));
  }
  EXPECT_GE(ticks.load(), 5);  // every 200 ms, over more than a second
  EXPECT_EQ(summaries.load(), 1);  // the first call; the next one is a minute away
  EXPECT_EQ(signals.load(), 0);
}

// SIGTERM (blocked everywhere, taken by the supervisor's sigtimedwait) calls
// on_signal once and stops the periodic work; destruction within the grace
// period ends it normally.
TEST(SupervisorTest, ASignalCallsOnSignalOnce) {
  BlockShutdownSignals();
  std::atomic<int> signals{0};
  {
    SupervisorOptions options;
    options.grace = seconds(30);
    options.on_signal = [&] { ++signals; };
    Supervisor supervisor(std::move(options));
    ASSERT_EQ(kill(getpid(), SIGTERM), 0);
    ASSERT_TRUE(testing::Eventually([&] { return signals.load() == 1; }));
  }
  EXPECT_EQ(signals.load(), 1);
}

}  // namespace
}  // namespace schedext
