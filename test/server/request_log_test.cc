#include "server/request_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "schedext/server/metrics.h"

namespace schedext::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(LogEscapeTest, PlainTextIsKept) {
  EXPECT_EQ(LogEscape("default/web-7d9f-abcde"), "default/web-7d9f-abcde");
  EXPECT_EQ(LogEscape(""), "");
  EXPECT_EQ(LogEscape("a b\"c'{}"), "a b\"c'{}");
}

TEST(LogEscapeTest, ControlCharactersAndBackslash) {
  EXPECT_EQ(LogEscape("a\nb"), "a\\nb");
  EXPECT_EQ(LogEscape("a\r\nb\tc"), "a\\r\\nb\\tc");
  EXPECT_EQ(LogEscape(std::string_view("\0\x01\x1b[31m\x1f\x7f", 9)),
            "\\x00\\x01\\x1b[31m\\x1f\\x7f");
  // A backslash always starts an escape, so a literal "\n" cannot pass for one.
  EXPECT_EQ(LogEscape("a\\nb"), "a\\\\nb");
}

TEST(LogEscapeTest, Utf8KeptMalformedEscaped) {
  EXPECT_EQ(LogEscape("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(LogEscape("\xFF\xFE"), "\\xff\\xfe");
  EXPECT_EQ(LogEscape("a\x80z"), "a\\x80z");                         // stray continuation byte
  EXPECT_EQ(LogEscape("\xC0\xAF"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(LogEscape("\xE0\x80\xAF"), "\\xe0\\x80\\xaf");           // overlong
  EXPECT_EQ(LogEscape("\xED\xA0\x80"), "\\xed\\xa0\\x80");           // surrogate U+D800
  EXPECT_EQ(LogEscape("\xF4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // > U+10FFFF
  EXPECT_EQ(LogEscape("ab\xE2\x82"), "ab\\xe2\\x82");                // cut sequence at the end
  // Line breaks outside ASCII: NEL (C1), LINE and PARAGRAPH SEPARATOR.
  EXPECT_EQ(LogEscape("a\xC2\x85"
                      "b\xE2\x80\xA8"
                      "c\xE2\x80\xA9"),
            "a\\u0085b\\u2028c\\u2029");
}

TEST(LogEscapeTest, TruncatesWithMarker) {
  const std::string name(4000, 'x');
  const std::string escaped = LogEscape(name);
  EXPECT_EQ(escaped, std::string(256, 'x') + "\xE2\x80\xA6(4000 bytes)");

  EXPECT_EQ(LogEscape("abcdef", 4), "abcd\xE2\x80\xA6(6 bytes)");
  EXPECT_EQ(LogEscape("abcd", 4), "abcd");
  // Never inside an escape or a character: "ab\n" needs 4 bytes, "ab" + "\\n".
  EXPECT_EQ(LogEscape("ab\ncd", 3), "ab\xE2\x80\xA6(5 bytes)");
  EXPECT_EQ(LogEscape("ab\ncd", 4), "ab\\n\xE2\x80\xA6(5 bytes)");
  EXPECT_EQ(LogEscape("a\xE2\x82\xAC", 3), "a\xE2\x80\xA6(4 bytes)");
  // The budget counts escaped bytes: 100 newlines become 200 bytes, cut at 256.
  const std::string newlines(200, '\n');
  const std::string cut = LogEscape(newlines);
  EXPECT_EQ(cut.substr(0, 256), [] {
    std::string s;
    for (int i = 0; i < 128; ++i) s += "\\n";
    return s;
  }());
  EXPECT_EQ(cut.substr(256), "\xE2\x80\xA6(200 bytes)");
}

TEST(LogEscapeTest, AppendKeepsWhatIsThere) {
  std::string out = "pod=";
  AppendLogEscaped("a\tb", out);
  EXPECT_EQ(out, "pod=a\\tb");
}

// A clock the test moves by hand.
struct FakeClock {
  LogLimiter::Clock::time_point now{std::chrono::hours(1)};
  std::function<LogLimiter::Clock::time_point()> Fn() {
    return [this] { return now; };
  }
};

// The default logger writes into `stream` for the test's lifetime.
class CaptureLog {
 public:
  CaptureLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_pattern("%l %v");
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  ~CaptureLog() { spdlog::set_default_logger(previous_); }
  std::string text() const { return stream_.str(); }

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::logger> previous_;
};

TEST(LogLimiterTest, BurstThenRateThenSummary) {
  CaptureLog log;
  FakeClock clock;
  Metrics metrics({"default"});
  LogLimiter limiter({.per_second = 10, .burst = 3, .what = "warnings about bad requests"},
                     &metrics, clock.Fn());
  // A full bucket: three at once, then nothing until a token comes back.
  EXPECT_TRUE(limiter.Allow());
  EXPECT_TRUE(limiter.Allow());
  EXPECT_TRUE(limiter.Allow());
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(limiter.Allow());
  }
  EXPECT_EQ(limiter.suppressed_total(), 5u);
  EXPECT_THAT(log.text(), Not(HasSubstr("suppressed")));
  clock.now += std::chrono::milliseconds(99);
  EXPECT_FALSE(limiter.Allow());
  clock.now += std::chrono::milliseconds(1);  // one token: 100 ms at 10/s
  EXPECT_TRUE(limiter.Allow());
  EXPECT_EQ(log.text(),
            "warning suppressed 6 warnings about bad requests in the last 0.1 s (limit 10/s, "
            "burst 3)\n");
  EXPECT_FALSE(limiter.Allow());
  EXPECT_EQ(limiter.suppressed_total(), 7u);

  // A quiet spell refills the bucket to its burst, no more.
  clock.now += std::chrono::seconds(60);
  EXPECT_TRUE(limiter.Allow());
  EXPECT_TRUE(limiter.Allow());
  EXPECT_TRUE(limiter.Allow());
  EXPECT_FALSE(limiter.Allow());
  EXPECT_THAT(log.text(), HasSubstr("suppressed 1 warnings about bad requests in the last 60.0 s"));

  std::string rendered;
  metrics.Render(rendered);
  EXPECT_THAT(rendered, HasSubstr("\n# TYPE schedext_log_suppressed_total counter\n"
                                  "schedext_log_suppressed_total 8\n"));
}

TEST(LogLimiterTest, SteadyRateIsAllowed) {
  CaptureLog log;
  FakeClock clock;
  LogLimiter limiter({.per_second = 4, .burst = 1, .what = "x"}, nullptr, clock.Fn());
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(limiter.Allow()) << i;
    EXPECT_FALSE(limiter.Allow()) << i;
    clock.now += std::chrono::milliseconds(250);
  }
  EXPECT_EQ(limiter.suppressed_total(), 20u);
  EXPECT_THAT(log.text(),
              HasSubstr("warning suppressed 1 x in the last 0.2 s (limit 4/s, burst 1)\n"));
}

TEST(LogLimiterTest, ZeroRateMeansUnlimited) {
  FakeClock clock;
  LogLimiter limiter({.per_second = 0, .burst = 1, .what = "x"}, nullptr, clock.Fn());
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(limiter.Allow());
  }
  EXPECT_EQ(limiter.suppressed_total(), 0u);
}

TEST(LogLimiterTest, ConcurrentCallersGetExactlyTheBurst) {
  CaptureLog log;
  FakeClock clock;  // frozen: only the initial burst can pass
  Metrics metrics({"default"});
  LogLimiter limiter({.per_second = 10, .burst = 50, .what = "w"}, &metrics, clock.Fn());
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5000; ++i) {
        if (limiter.Allow()) {
          allowed.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  EXPECT_EQ(allowed.load(), 50);
  EXPECT_EQ(limiter.suppressed_total(), 20000u - 50u);
  std::string rendered;
  metrics.Render(rendered);
  EXPECT_THAT(rendered, HasSubstr("schedext_log_suppressed_total 19950\n"));
}

}  // namespace
}  // namespace schedext::server
