// Fuzz target: model::Quantity::Parse and the accessors the decoder uses
// (model::ParseResourceAmount), on one input taken as the quantity's text.
//
// Checks, beyond sanitizer reports (signed 128-bit overflow is UB that UBSan
// sees):
// * a parsed value stays within the documented bound (2^63 units);
// * Milli() and Value() are exactly ceil(nanos / 10^6) and ceil(nanos / 10^9),
//   and fail exactly when that does not fit an int64;
// * ParseResourceAmount answers Milli() for cpu and Value() otherwise;
// * the value printed in nano-units ("<n>n") parses back to itself;
// * errors are kInvalidArgument, and stay valid UTF-8 when the input is (the
//   quoted input is cut for logs and may end up in a JSON reply).
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "schedext/model/quantity.h"
#include "schedext/model/resources.h"
#include "schedext/status.h"

namespace schedext::fuzz {
namespace {

using model::Int128;

std::string ToString(Int128 value) {
  if (value == 0) {
    return "0";
  }
  const bool negative = value < 0;
  // Digits of the magnitude, built from the negative side so -2^127 fits.
  std::string digits;
  Int128 rest = negative ? value : -value;
  while (rest != 0) {
    digits.insert(digits.begin(), static_cast<char>('0' - static_cast<int>(rest % 10)));
    rest /= 10;
  }
  return negative ? "-" + digits : digits;
}

// ceil(n / d) for d > 0, as Int128.
Int128 CeilDiv(Int128 n, Int128 d) {
  Int128 q = n / d;
  if (n % d != 0 && n > 0) {
    ++q;
  }
  return q;
}

bool FitsInt64(Int128 v) {
  return v >= std::numeric_limits<int64_t>::min() && v <= std::numeric_limits<int64_t>::max();
}

void CheckError(const Status& status, std::string_view text) {
  SCHEDEXT_FUZZ_CHECK(status.code() == StatusCode::kInvalidArgument, status.message());
  if (IsUtf8(text)) {
    SCHEDEXT_FUZZ_CHECK(IsUtf8(status.message()), "message not UTF-8: " + status.message());
  }
  // Cut to a bounded length however long the input.
  SCHEDEXT_FUZZ_CHECK(status.message().size() < 200, status.message());
}

void CheckAccessor(const StatusOr<int64_t>& got, Int128 want, const char* what) {
  if (FitsInt64(want)) {
    SCHEDEXT_FUZZ_CHECK(got.ok() && *got == static_cast<int64_t>(want),
                        std::string(what) + ": want " + ToString(want) + ", got " +
                            (got.ok() ? std::to_string(*got) : got.status().message()));
  } else {
    SCHEDEXT_FUZZ_CHECK(!got.ok(), std::string(what) + ": " + ToString(want) +
                                       " does not fit an int64 but was answered");
    SCHEDEXT_FUZZ_CHECK(got.status().code() == StatusCode::kInvalidArgument,
                        got.status().message());
  }
}

}  // namespace
}  // namespace schedext::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace schedext;
  using model::Int128;
  const std::string_view text = fuzz::AsText(data, size);

  const StatusOr<model::Quantity> parsed = model::Quantity::Parse(text);
  const StatusOr<int64_t> cpu = model::ParseResourceAmount(model::kResourceCpu, text);
  const StatusOr<int64_t> memory = model::ParseResourceAmount(model::kResourceMemory, text);
  if (!parsed.ok()) {
    fuzz::CheckError(parsed.status(), text);
    SCHEDEXT_FUZZ_CHECK(!cpu.ok() && !memory.ok(), "ParseResourceAmount accepted " +
                                                       std::string(text));
    fuzz::CheckError(cpu.status(), text);
    return 0;
  }

  const Int128 nanos = parsed->nanos();
  const Int128 limit = (Int128{1} << 63) * 1'000'000'000;
  SCHEDEXT_FUZZ_CHECK(nanos <= limit && nanos >= -limit, fuzz::ToString(nanos));
  SCHEDEXT_FUZZ_CHECK(parsed->is_zero() == (nanos == 0), fuzz::ToString(nanos));

  const Int128 milli = fuzz::CeilDiv(nanos, 1'000'000);
  const Int128 value = fuzz::CeilDiv(nanos, 1'000'000'000);
  fuzz::CheckAccessor(parsed->Milli(), milli, "Milli");
  fuzz::CheckAccessor(parsed->Value(), value, "Value");
  fuzz::CheckAccessor(cpu, milli, "ParseResourceAmount(cpu)");
  fuzz::CheckAccessor(memory, value, "ParseResourceAmount(memory)");
  if (!cpu.ok()) {
    fuzz::CheckError(cpu.status(), text);
  }
  if (!memory.ok()) {
    fuzz::CheckError(memory.status(), text);
  }

  // The exact value in nano-units reads back unchanged.
  const std::string canonical = fuzz::ToString(nanos) + "n";
  const StatusOr<model::Quantity> reparsed = model::Quantity::Parse(canonical);
  SCHEDEXT_FUZZ_CHECK(reparsed.ok() && reparsed->nanos() == nanos,
                      std::string(text) + " -> " + canonical + " -> " +
                          (reparsed.ok() ? fuzz::ToString(reparsed->nanos())
                                         : reparsed.status().message()));
  return 0;
}
