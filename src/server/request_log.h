// Request-derived text in log lines, made safe: escaping + truncation of the
// strings a client controls, and a rate limiter for warnings a client can
// trigger at will (bad requests).
//
// Why: a pod name holding "\n" used to forge whole log lines in the text
// format, a 3.9 MB name made a 7.8 MB line, and a flood of bad requests wrote
// one warning each (343 MB in 90 s).
//
// Use:
//   spdlog::warn("filter pod={}/{}: {}", LogEscape(ns), LogEscape(name), LogEscape(error));
//
//   // One limiter per kind of client-triggered warning, owned by the server
//   // or service object (never a global).
//   LogLimiter bad_requests_{LogLimiter::Options{}, metrics};
//   ...
//   if (bad_requests_.Allow()) {      // logs "suppressed N ..." first when due
//     spdlog::warn("bad request from {}: {}", peer, LogEscape(reason));
//   }
//
// Thread-safety: the functions are pure; LogLimiter::Allow may be called from
// any number of threads at once (lock-free; a few atomic operations).
#ifndef SCHEDEXT_SERVER_REQUEST_LOG_H_
#define SCHEDEXT_SERVER_REQUEST_LOG_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "schedext/server/metrics.h"

namespace schedext::server {

// Longest escaped form of one request-derived field, in bytes, before the
// truncation marker. Kubernetes names are at most 253 bytes, so a real name
// is never cut; error messages that quote request content are.
inline constexpr size_t kLogFieldMaxBytes = 256;
// For error messages, which carry the API server's answer (its Status message
// alone can be a few hundred bytes) and may quote request content.
inline constexpr size_t kLogMessageMaxBytes = 1024;

// Appends `text` to `out` so that it is one printable, unambiguous field of a
// log line:
//   * '\\' -> "\\\\", '\n' -> "\\n", '\r' -> "\\r", '\t' -> "\\t";
//   * any other byte < 0x20, and 0x7f -> "\\xNN" (two lowercase hex digits);
//   * bytes that are not part of well-formed UTF-8 (stray continuation
//     bytes, overlong forms, surrogates, > U+10FFFF, cut sequences) ->
//     "\\xNN" each; well-formed UTF-8 is kept as is, except the C1 controls
//     U+0080..U+009F and the line/paragraph separators U+2028 / U+2029 ->
//     "\\uNNNN" (some log viewers break lines on them).
// So the output is valid UTF-8 without control characters, and a backslash in
// it always starts an escape. When the escaped form would exceed `max_bytes`,
// it is cut before the first escape or character that does not fit (never
// inside one) and "…(N bytes)" is appended, N being text.size().
void AppendLogEscaped(std::string_view text, std::string& out,
                      size_t max_bytes = kLogFieldMaxBytes);

// AppendLogEscaped into a new string (for fmt/spdlog arguments).
std::string LogEscape(std::string_view text, size_t max_bytes = kLogFieldMaxBytes);

// A token bucket for warnings (a GCRA on one atomic: no lock, no thread).
// Allow() says whether one more warning may be written now. Dropped warnings
// are counted: the next allowed Allow() first logs one summary line
// ("suppressed N <what> in the last S s (limit R/s, burst B)") at warn level,
// and every drop is added to Metrics' schedext_log_suppressed_total at once
// (so drops are visible even when no warning follows them).
class LogLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    // Sustained warnings per second, and how many may come at once after a
    // quiet spell. The defaults keep the first lines of a real incident
    // complete (20 at once) and cap a flood at 10 lines/s — with fields cut
    // to 256 bytes, a few KB/s of log instead of the ~4 MB/s seen unthrottled.
    double per_second = 10.0;
    int burst = 20;
    // Names the warnings in the summary line ("warnings about bad requests").
    std::string what = "warnings about bad requests";
  };

  // `metrics` (may be null) must outlive the limiter. `now` (tests) replaces
  // Clock::now().
  explicit LogLimiter(Options options, Metrics* metrics = nullptr,
                      std::function<Clock::time_point()> now = nullptr);
  LogLimiter(const LogLimiter&) = delete;
  LogLimiter& operator=(const LogLimiter&) = delete;

  // True: write the warning (a pending "suppressed N" summary has just been
  // logged). False: drop it (it is counted).
  bool Allow();

  // Warnings dropped by this limiter since it was made.
  uint64_t suppressed_total() const { return suppressed_total_.load(std::memory_order_relaxed); }
  const Options& options() const { return options_; }

 private:
  int64_t NowNanos() const;

  const Options options_;
  Metrics* const metrics_;
  const std::function<Clock::time_point()> now_;
  const int64_t interval_ns_;   // one token
  const int64_t tolerance_ns_;  // (burst - 1) tokens
  // GCRA's theoretical arrival time of the next warning, in ns of the clock.
  std::atomic<int64_t> tat_ns_;
  // Drops since the last summary, and when the first of them happened.
  std::atomic<uint64_t> pending_{0};
  std::atomic<int64_t> first_pending_ns_{0};
  std::atomic<uint64_t> suppressed_total_{0};
};

}  // namespace schedext::server

#endif  // SCHEDEXT_SERVER_REQUEST_LOG_H_
