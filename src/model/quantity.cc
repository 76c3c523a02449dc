#include "schedext/model/quantity.h"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "common/text.h"

namespace schedext::model {
namespace {

constexpr Int128 kNanosPerUnit = 1'000'000'000;
constexpr Int128 kNanosPerMilli = 1'000'000;

// Parse keeps values whose magnitude is at most 2^63 units: the whole range an
// int64 accessor can answer (-2^63 included). Go keeps larger decimal values,
// but every scheduler accessor would overflow on them, so reporting them here,
// with the input quoted, is the only useful answer.
constexpr Int128 kMaxDecimalNanos = (Int128{1} << 63) * kNanosPerUnit;
// apimachinery silently caps BinarySI values at 2^63-1 units ("8Ei").
constexpr Int128 kMaxBinaryNanos = ((Int128{1} << 63) - 1) * kNanosPerUnit;

// Intermediate results are exact while below kOverflow. It sits well above both
// limits (~9.2e27 nanos), so anything reaching it is out of range or capped.
constexpr Int128 kOverflow = Int128{1} << 100;  // ~1.27e30
// A run of at most this many decimal digits is < 1e30 < kOverflow.
constexpr int64_t kMaxDigits = 30;
// Exponents are clamped here while parsing. Inputs are far shorter than this, so
// a clamped exponent still yields "out of range" or "smallest non-zero".
constexpr int64_t kMaxExponent = 1'000'000'000'000'000;

// Quantities are ASCII; messages cut them (QuoteShort) so a hostile body
// cannot blow up logs.

Status InvalidQuantity(std::string_view text) {
  return InvalidArgumentError("invalid quantity " + QuoteShort(text));
}

Status OutOfRange(std::string_view text) {
  return InvalidArgumentError("quantity " + QuoteShort(text) + " is out of range");
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

size_t DigitRun(std::string_view text, size_t pos) {
  size_t end = pos;
  while (end < text.size() && IsDigit(text[end])) {
    ++end;
  }
  return end - pos;
}

// What the suffix multiplies the number by: 10^exp10 × 2^binary_shift.
struct Multiplier {
  int64_t exp10 = 0;
  int binary_shift = 0;
  bool binary = false;
};

bool ParseSuffix(std::string_view suffix, Multiplier& out) {
  if (suffix.size() == 2 && suffix[1] == 'i') {
    constexpr std::string_view kBinary = "KMGTPE";
    size_t index = kBinary.find(suffix[0]);
    if (index == std::string_view::npos) {
      return false;
    }
    out.binary = true;
    out.binary_shift = 10 * static_cast<int>(index + 1);
    return true;
  }
  if (suffix.empty()) {
    out.exp10 = 0;
    return true;
  }
  if (suffix.size() == 1) {
    // Entry i stands for 10^(3i-9); the blank is the empty suffix, handled above.
    // Case matters ("K" is invalid) and a lone "E" is exa, not an exponent.
    constexpr std::string_view kDecimal = "num kMGTPE";
    size_t index = kDecimal.find(suffix[0]);
    if (index == std::string_view::npos || suffix[0] == ' ') {
      return false;
    }
    out.exp10 = 3 * static_cast<int64_t>(index) - 9;
    return true;
  }
  // Decimal exponent: [eE][+-]?digits (what strconv.ParseInt accepts after the e).
  if (suffix[0] != 'e' && suffix[0] != 'E') {
    return false;
  }
  size_t pos = 1;
  bool negative = false;
  if (suffix[pos] == '+' || suffix[pos] == '-') {
    negative = suffix[pos] == '-';
    ++pos;
  }
  if (pos == suffix.size() || DigitRun(suffix, pos) != suffix.size() - pos) {
    return false;
  }
  int64_t exponent = 0;
  for (; pos < suffix.size(); ++pos) {
    exponent = exponent * 10 + (suffix[pos] - '0');
    if (exponent > kMaxExponent) {
      exponent = kMaxExponent;
      break;
    }
  }
  out.exp10 = negative ? -exponent : exponent;
  return true;
}

// The significant digits of the number: the integer digits then the fraction
// digits, read as one integer, without its leading zeros.
class DigitString {
 public:
  DigitString(std::string_view integer, std::string_view fraction) {
    while (!integer.empty() && integer.front() == '0') {
      integer.remove_prefix(1);
    }
    if (integer.empty()) {
      while (!fraction.empty() && fraction.front() == '0') {
        fraction.remove_prefix(1);
      }
    }
    head_ = integer;
    tail_ = fraction;
  }

  size_t size() const { return head_.size() + tail_.size(); }
  int At(size_t i) const {
    return (i < head_.size() ? head_[i] : tail_[i - head_.size()]) - '0';
  }
  // The value of digits [0, count); count <= kMaxDigits.
  Int128 Prefix(size_t count) const {
    Int128 value = 0;
    for (size_t i = 0; i < count; ++i) {
      value = value * 10 + At(i);
    }
    return value;
  }

 private:
  std::string_view head_;
  std::string_view tail_;
};

// a * b, or kOverflow when the product would reach it. a, b >= 0.
Int128 MulOrOverflow(Int128 a, Int128 b) {
  if (b != 0 && a > (kOverflow - 1) / b) {
    return kOverflow;
  }
  return a * b;
}

// |digits| × 10^exp10 × multiplier, in nanos, rounded away from zero to an
// integer; kOverflow when it is too large to matter.
Int128 Magnitude(const DigitString& digits, int64_t exp10, Int128 multiplier) {
  const auto length = static_cast<int64_t>(digits.size());
  if (exp10 >= 0) {
    if (length + exp10 > kMaxDigits) {
      return kOverflow;
    }
    Int128 value = digits.Prefix(digits.size());
    for (int64_t i = 0; i < exp10; ++i) {
      value *= 10;
    }
    return MulOrOverflow(value, multiplier);
  }

  // Split digits × 10^exp10 into an integer head and a fraction of `scale`
  // digits. Multiplying the fraction by a binary suffix moves part of it into
  // the integer, so it is multiplied out digit by digit (schoolbook, right to
  // left) instead of being truncated: the carry out of the top is its integer
  // part and any non-zero digit left below the point means "round up".
  const int64_t scale = -exp10;
  const int64_t head_length = length > scale ? length - scale : 0;
  if (head_length > kMaxDigits) {
    return kOverflow;
  }
  Int128 carry = 0;
  bool inexact = false;
  for (int64_t i = length; i > head_length; --i) {
    Int128 x = digits.At(static_cast<size_t>(i - 1)) * multiplier + carry;
    inexact = inexact || x % 10 != 0;
    carry = x / 10;
  }
  // The fraction's implicit leading zeros (e.g. the 1e-10 of "1e-10"): only
  // the carry is left to shift down, so this ends after at most ~20 rounds.
  for (int64_t zeros = scale - (length - head_length); zeros > 0 && carry != 0; --zeros) {
    inexact = inexact || carry % 10 != 0;
    carry /= 10;
  }
  Int128 value = MulOrOverflow(digits.Prefix(static_cast<size_t>(head_length)), multiplier);
  if (value == kOverflow) {
    return kOverflow;
  }
  return value + carry + (inexact ? 1 : 0);
}

// ceil(nanos / divisor) as an int64, or nothing when it does not fit.
bool CeilToInt64(Int128 nanos, Int128 divisor, int64_t& out) {
  Int128 quotient = nanos / divisor;  // truncates toward zero: ceil for negatives
  if (nanos % divisor != 0 && nanos > 0) {
    ++quotient;
  }
  if (quotient > std::numeric_limits<int64_t>::max() ||
      quotient < std::numeric_limits<int64_t>::min()) {
    return false;
  }
  out = static_cast<int64_t>(quotient);
  return true;
}

}  // namespace

StatusOr<Quantity> Quantity::Parse(std::string_view text) {
  size_t pos = 0;
  bool negative = false;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    negative = text[pos] == '-';
    ++pos;
  }
  const std::string_view integer = text.substr(pos, DigitRun(text, pos));
  pos += integer.size();
  std::string_view fraction;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    fraction = text.substr(pos, DigitRun(text, pos));
    pos += fraction.size();
  }
  // apimachinery's scanner reads a missing number (".", "-", "Ki", "e3") as 0;
  // the grammar it documents requires a digit, and so do we.
  if (integer.empty() && fraction.empty()) {
    return InvalidQuantity(text);
  }
  Multiplier multiplier;
  if (!ParseSuffix(text.substr(pos), multiplier)) {
    return InvalidQuantity(text);
  }

  const DigitString digits(integer, fraction);
  if (digits.size() == 0) {
    return Quantity(0);
  }
  // value in nanos = digits × 10^(exp10 + 9 − fraction digits) × 2^shift.
  const int64_t exp10 = multiplier.exp10 + 9 - static_cast<int64_t>(fraction.size());
  Int128 magnitude = Magnitude(digits, exp10, Int128{1} << multiplier.binary_shift);
  if (multiplier.binary) {
    if (magnitude > kMaxBinaryNanos) {
      magnitude = kMaxBinaryNanos;
    }
  } else if (magnitude > kMaxDecimalNanos) {
    return OutOfRange(text);
  }
  return Quantity(negative ? -magnitude : magnitude);
}

StatusOr<int64_t> Quantity::Milli() const {
  int64_t milli = 0;
  if (!CeilToInt64(nanos_, kNanosPerMilli, milli)) {
    return InvalidArgumentError("quantity is out of range: its milli-value does not fit an int64");
  }
  return milli;
}

StatusOr<int64_t> Quantity::Value() const {
  int64_t value = 0;
  if (!CeilToInt64(nanos_, kNanosPerUnit, value)) {
    return InvalidArgumentError("quantity is out of range: its value does not fit an int64");
  }
  return value;
}

}  // namespace schedext::model
