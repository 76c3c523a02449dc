#include "common/civil_time.h"

#include <cstdio>

namespace schedext {
namespace {

bool Digits(std::string_view s, size_t at, size_t n, int64_t& out) {
  if (at + n > s.size()) return false;
  out = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

// Days from 1970-01-01 to y-m-d (proleptic Gregorian).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// The inverse of DaysFromCivil.
void CivilFromDays(int64_t z, int64_t& y, int64_t& m, int64_t& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y = yoe + era * 400 + (m <= 2 ? 1 : 0);
}

}  // namespace

bool ParseCivilDateTime(std::string_view s, char separator, int64_t& unix_seconds) {
  int64_t y, mo, d, h, mi, se;
  if (s.size() != 19 || s[4] != '-' || s[7] != '-' || s[10] != separator || s[13] != ':' ||
      s[16] != ':' || !Digits(s, 0, 4, y) || !Digits(s, 5, 2, mo) || !Digits(s, 8, 2, d) ||
      !Digits(s, 11, 2, h) || !Digits(s, 14, 2, mi) || !Digits(s, 17, 2, se)) {
    return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59) return false;
  unix_seconds = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
  return true;
}

bool ParseRfc3339(std::string_view s, int64_t& unix_seconds) {
  if (s.size() < 20 || s[10] != 'T' || !ParseCivilDateTime(s.substr(0, 19), 'T', unix_seconds)) {
    return false;
  }
  size_t at = 19;
  if (s[at] == '.') {
    const size_t first = ++at;
    while (at < s.size() && s[at] >= '0' && s[at] <= '9') ++at;
    if (at == first) return false;
  }
  if (at < s.size() && s[at] == 'Z') {
    return at + 1 == s.size();
  }
  int64_t oh, om;
  if (at + 6 != s.size() || (s[at] != '+' && s[at] != '-') || !Digits(s, at + 1, 2, oh) ||
      s[at + 3] != ':' || !Digits(s, at + 4, 2, om) || oh > 23 || om > 59) {
    return false;
  }
  unix_seconds -= (s[at] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
  return true;
}

std::string_view FormatRfc3339Utc(int64_t unix_seconds, char (&buffer)[32]) {
  int64_t days = unix_seconds / 86400;
  int64_t secs = unix_seconds % 86400;
  if (secs < 0) {
    secs += 86400;
    --days;
  }
  int64_t y, m, d;
  CivilFromDays(days, y, m, d);
  const int n = std::snprintf(buffer, sizeof buffer, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ",
                              static_cast<long long>(y), static_cast<long long>(m),
                              static_cast<long long>(d), static_cast<long long>(secs / 3600),
                              static_cast<long long>(secs / 60 % 60),
                              static_cast<long long>(secs % 60));
  return std::string_view(buffer, n > 0 ? static_cast<size_t>(n) : 0);
}

}  // namespace schedext
