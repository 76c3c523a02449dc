// Small string helpers for messages and config text, written once.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace schedext {

// `text` in double quotes with `"`, `\` and control bytes escaped, so a value
// from a request or a file cannot break the line or the message it lands in.
std::string Quote(std::string_view text);

// Quote() of at most `max_bytes` of `text`, cut on a UTF-8 boundary and
// marked with "...": for values that may be megabytes long.
std::string QuoteShort(std::string_view text, size_t max_bytes = 40);

// `text` without leading and trailing ASCII whitespace (space, \t, \r, \n, \v, \f).
std::string_view TrimSpace(std::string_view text);

// `text` without leading and trailing spaces and tabs only: HTTP's optional
// whitespace (RFC 9110 §5.6.3), list elements in annotations.
std::string_view TrimBlanks(std::string_view text);

// "a, b, c": for "expected one of ..." messages.
std::string JoinNames(std::span<const std::string_view> names);

// The shortest text that reads back as `value` ("0.8", "100", "1e+21"): for
// numbers in messages and in the Prometheus text format.
std::string FormatNumber(double value);

}  // namespace schedext
