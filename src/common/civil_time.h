// Timestamps written as text by other components (HAMi's handshake and node
// lock), read as Unix seconds without the C library's time zone state.
#pragma once

#include <cstdint>
#include <string_view>

namespace schedext {

// "YYYY-MM-DD<separator>hh:mm:ss" (exactly 19 bytes) read as UTC; false for
// anything else, including out-of-range fields.
bool ParseCivilDateTime(std::string_view text, char separator, int64_t& unix_seconds);

// Go's time.RFC3339 as time.Parse reads it: "2006-01-02T15:04:05", optional
// fractional seconds (ignored), then "Z" or "±hh:mm".
bool ParseRfc3339(std::string_view text, int64_t& unix_seconds);

// `unix_seconds` as "YYYY-MM-DDThh:mm:ssZ".
std::string_view FormatRfc3339Utc(int64_t unix_seconds, char (&buffer)[32]);

}  // namespace schedext
