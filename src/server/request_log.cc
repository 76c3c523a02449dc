#include "server/request_log.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace schedext::server {
namespace {

constexpr char kHex[] = "0123456789abcdef";

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the well-formed UTF-8 sequence starting at text[i] (a byte >=
// 0x80), or 0 when it is not one (RFC 3629 Table 3-7: no overlongs, no
// surrogates, nothing above U+10FFFF).
size_t Utf8Length(std::string_view text, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const size_t left = text.size() - i;
  const unsigned char c = at(0);
  if (c >= 0xC2 && c <= 0xDF) {
    return left >= 2 && IsContinuation(at(1)) ? 2 : 0;
  }
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !IsContinuation(at(1)) || !IsContinuation(at(2))) return 0;
    if (c == 0xE0 && at(1) < 0xA0) return 0;  // overlong
    if (c == 0xED && at(1) > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !IsContinuation(at(1)) || !IsContinuation(at(2)) || !IsContinuation(at(3))) {
      return 0;
    }
    if (c == 0xF0 && at(1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && at(1) > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

// The escape of one unit into `buf` (at most 6 bytes); returns its length, or
// 0 when the unit is copied as is.
size_t EscapeByte(unsigned char c, char* buf) {
  switch (c) {
    case '\\':
      buf[0] = '\\';
      buf[1] = '\\';
      return 2;
    case '\n':
      buf[0] = '\\';
      buf[1] = 'n';
      return 2;
    case '\r':
      buf[0] = '\\';
      buf[1] = 'r';
      return 2;
    case '\t':
      buf[0] = '\\';
      buf[1] = 't';
      return 2;
    default:
      buf[0] = '\\';
      buf[1] = 'x';
      buf[2] = kHex[c >> 4];
      buf[3] = kHex[c & 0xF];
      return 4;
  }
}

size_t EscapeCodePoint(uint32_t cp, char* buf) {
  buf[0] = '\\';
  buf[1] = 'u';
  buf[2] = kHex[(cp >> 12) & 0xF];
  buf[3] = kHex[(cp >> 8) & 0xF];
  buf[4] = kHex[(cp >> 4) & 0xF];
  buf[5] = kHex[cp & 0xF];
  return 6;
}

bool IsPlain(unsigned char c) { return c >= 0x20 && c < 0x7F && c != '\\'; }

}  // namespace

void AppendLogEscaped(std::string_view text, std::string& out, size_t max_bytes) {
  // The common case, a short plain name, costs one scan and one append.
  if (text.size() <= max_bytes && std::all_of(text.begin(), text.end(), [](char c) {
        return IsPlain(static_cast<unsigned char>(c));
      })) {
    out.append(text);
    return;
  }
  size_t written = 0;
  size_t i = 0;
  char buf[8];
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const char* unit = buf;
    size_t unit_size = 0;
    size_t consumed = 1;
    if (IsPlain(c)) {
      unit = text.data() + i;
      unit_size = 1;
    } else if (c < 0x80) {
      unit_size = EscapeByte(c, buf);
    } else if (const size_t n = Utf8Length(text, i); n == 0) {
      unit_size = EscapeByte(c, buf);
    } else {
      consumed = n;
      uint32_t cp = 0;
      if (n == 2) {
        cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu);
      } else if (n == 3) {
        cp = ((c & 0x0Fu) << 12) | ((static_cast<unsigned char>(text[i + 1]) & 0x3Fu) << 6) |
             (static_cast<unsigned char>(text[i + 2]) & 0x3Fu);
      }
      if ((cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029) {
        unit_size = EscapeCodePoint(cp, buf);
      } else {
        unit = text.data() + i;
        unit_size = n;
      }
    }
    if (written + unit_size > max_bytes) {
      out.append("\xE2\x80\xA6(");  // U+2026 HORIZONTAL ELLIPSIS
      out.append(std::to_string(text.size()));
      out.append(" bytes)");
      return;
    }
    out.append(unit, unit_size);
    written += unit_size;
    i += consumed;
  }
}

std::string LogEscape(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 16);
  AppendLogEscaped(text, out, max_bytes);
  return out;
}

namespace {

int64_t IntervalNanos(double per_second) {
  if (!(per_second > 0)) {
    return 0;  // not limited
  }
  return std::max<int64_t>(1, std::llround(1e9 / per_second));
}

}  // namespace

LogLimiter::LogLimiter(Options options, Metrics* metrics, std::function<Clock::time_point()> now)
    : options_(std::move(options)),
      metrics_(metrics),
      now_(std::move(now)),
      interval_ns_(IntervalNanos(options_.per_second)),
      tolerance_ns_(interval_ns_ * (std::max(options_.burst, 1) - 1)),
      // Starts full: a whole burst is allowed right away, whatever the clock reads.
      tat_ns_(NowNanos() - tolerance_ns_ - interval_ns_) {}

int64_t LogLimiter::NowNanos() const {
  const Clock::time_point t = now_ ? now_() : Clock::now();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

bool LogLimiter::Allow() {
  const int64_t now = NowNanos();
  int64_t tat = tat_ns_.load(std::memory_order_relaxed);
  for (;;) {
    const int64_t base = std::max(tat, now);
    if (base - now > tolerance_ns_) {
      if (pending_.fetch_add(1, std::memory_order_relaxed) == 0) {
        first_pending_ns_.store(now, std::memory_order_relaxed);
      }
      suppressed_total_.fetch_add(1, std::memory_order_relaxed);
      if (metrics_ != nullptr) {
        metrics_->RecordLogSuppressed(1);
      }
      return false;
    }
    if (tat_ns_.compare_exchange_weak(tat, base + interval_ns_, std::memory_order_relaxed)) {
      break;
    }
  }
  if (pending_.load(std::memory_order_relaxed) != 0) {
    const int64_t since = first_pending_ns_.load(std::memory_order_relaxed);
    const uint64_t dropped = pending_.exchange(0, std::memory_order_relaxed);
    if (dropped != 0) {
      const double seconds = static_cast<double>(std::max<int64_t>(now - since, 0)) / 1e9;
      spdlog::warn("suppressed {} {} in the last {:.1f} s (limit {}/s, burst {})", dropped,
                   options_.what, seconds, options_.per_second, std::max(options_.burst, 1));
    }
  }
  return true;
}

}  // namespace schedext::server
