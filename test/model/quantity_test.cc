#include "schedext/model/quantity.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "schedext/model/resources.h"

namespace schedext::model {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr Int128 kNano = 1'000'000'000;
// 2^63 - 1 units: the BinarySI cap, in nanos.
constexpr Int128 kBinaryCapNanos = Int128{kInt64Max} * kNano;

struct ValidCase {
  std::string text;
  Int128 nanos;
  // nullopt: the accessor must report that the result does not fit an int64.
  std::optional<int64_t> milli;
  std::optional<int64_t> value;
};

void ExpectParses(const ValidCase& c) {
  SCOPED_TRACE("input \"" + c.text + "\"");
  StatusOr<Quantity> q = Quantity::Parse(c.text);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_TRUE(q->nanos() == c.nanos) << "nanos differ";
  EXPECT_EQ(q->is_zero(), c.nanos == 0);
  StatusOr<int64_t> milli = q->Milli();
  if (c.milli.has_value()) {
    ASSERT_TRUE(milli.ok()) << milli.status().ToString();
    EXPECT_EQ(*milli, *c.milli);
  } else {
    ASSERT_FALSE(milli.ok());
    EXPECT_EQ(milli.status().code(), StatusCode::kInvalidArgument);
  }
  StatusOr<int64_t> value = q->Value();
  if (c.value.has_value()) {
    ASSERT_TRUE(value.ok()) << value.status().ToString();
    EXPECT_EQ(*value, *c.value);
  } else {
    ASSERT_FALSE(value.ok());
    EXPECT_EQ(value.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(QuantityTest, ParsesEveryRowOfTheProtocolTable) {
  const std::vector<ValidCase> cases = {
      {"100m", 100'000'000, 100, 1},  // 0.1: milli 100, value ceil(0.1) = 1
      {"1.5", 1'500'000'000, 1500, 2},
      {"2", 2 * kNano, 2000, 2},
      {"1e3", 1000 * kNano, 1'000'000, 1000},
      {"1E3", 1000 * kNano, 1'000'000, 1000},
      {"1k", 1000 * kNano, 1'000'000, 1000},
      {"4k", 4000 * kNano, 4'000'000, 4000},
      // 500 × 2^20 = 524 288 000
      {"500Mi", Int128{524'288'000} * kNano, 524'288'000'000, 524'288'000},
      // 2 × 2^30 = 2 147 483 648
      {"2Gi", Int128{2'147'483'648} * kNano, 2'147'483'648'000, 2'147'483'648},
      // 1.5 × 2^30 = 1 610 612 736
      {"1.5Gi", Int128{1'610'612'736} * kNano, 1'610'612'736'000, 1'610'612'736},
      // 1.1 × 1024 = 1126.4: milli 1 126 400, value ceil = 1127
      {"1.1Ki", Int128{1'126'400'000'000}, 1'126'400, 1127},
      {"12e-3", 12'000'000, 12, 1},  // 0.012
      {"1.5m", 1'500'000, 2, 1},     // 0.0015: milli ceil(1.5) = 2
      {"0.0001", 100'000, 1, 1},     // milli ceil(0.1) = 1
      {"1u", 1000, 1, 1},
      {"1n", 1, 1, 1},
      {".5", 500'000'000, 500, 1},
      {"5.", 5 * kNano, 5000, 5},
      {"+5", 5 * kNano, 5000, 5},
      // 1e18 units: the milli-value 1e21 does not fit an int64
      {"1E", Int128{1'000'000'000'000'000'000} * kNano, std::nullopt, 1'000'000'000'000'000'000},
  };
  for (const ValidCase& c : cases) {
    ExpectParses(c);
  }
}

TEST(QuantityTest, ParsesEveryDecimalSuffix) {
  const std::vector<ValidCase> cases = {
      {"7n", 7, 1, 1},
      {"7u", 7'000, 1, 1},
      {"7m", 7'000'000, 7, 1},
      {"7", 7 * kNano, 7'000, 7},
      {"7k", 7'000 * kNano, 7'000'000, 7'000},
      {"7M", 7'000'000 * kNano, 7'000'000'000, 7'000'000},
      {"7G", Int128{7'000'000'000} * kNano, 7'000'000'000'000, 7'000'000'000},
      {"7T", Int128{7'000'000'000'000} * kNano, 7'000'000'000'000'000, 7'000'000'000'000},
      {"7P", Int128{7'000'000'000'000'000} * kNano, 7'000'000'000'000'000'000,
       7'000'000'000'000'000},
      {"7E", Int128{7'000'000'000'000'000'000} * kNano, std::nullopt,
       7'000'000'000'000'000'000},
  };
  for (const ValidCase& c : cases) {
    ExpectParses(c);
  }
}

TEST(QuantityTest, ParsesBinarySuffixes) {
  const std::vector<ValidCase> cases = {
      {"3Ki", 3'072 * kNano, 3'072'000, 3'072},                 // 3 × 2^10
      {"3Mi", 3'145'728 * kNano, 3'145'728'000, 3'145'728},     // 3 × 2^20
      {"3Gi", Int128{3'221'225'472} * kNano, 3'221'225'472'000, 3'221'225'472},  // 3 × 2^30
      {"3Ti", Int128{3'298'534'883'328} * kNano, 3'298'534'883'328'000,
       3'298'534'883'328},  // 3 × 2^40
      {"3Pi", Int128{3'377'699'720'527'872} * kNano, 3'377'699'720'527'872'000,
       3'377'699'720'527'872},  // 3 × 2^50; milli 3.4e18 still fits
      {"1Ei", Int128{1'152'921'504'606'846'976} * kNano, std::nullopt,
       1'152'921'504'606'846'976},  // 2^60
      {"0.5Ki", 512 * kNano, 512'000, 512},
      {"1.5Mi", 1'572'864 * kNano, 1'572'864'000, 1'572'864},  // 1.5 × 2^20
      // 1e-10 × 1024 = 102.4 nanos, rounded away from zero to 103
      {"0.0000000001Ki", 103, 1, 1},
      // 1024 + 1.024e-7: any fraction makes the value round up to 1025
      {"1.0000000001Ki", 1024 * kNano + 103, 1'024'001, 1025},
  };
  for (const ValidCase& c : cases) {
    ExpectParses(c);
  }
}

TEST(QuantityTest, ParsesDecimalExponents) {
  const std::vector<ValidCase> cases = {
      {"5e+2", 500 * kNano, 500'000, 500},
      {"5E+2", 500 * kNano, 500'000, 500},
      {"2E-3", 2'000'000, 2, 1},
      {"1e0", kNano, 1000, 1},
      {"1e03", 1000 * kNano, 1'000'000, 1000},  // leading zeros in the exponent
      {"1.5e1", 15 * kNano, 15'000, 15},
      {".5e1", 5 * kNano, 5'000, 5},
      {"5.e-1", 500'000'000, 500, 1},
      {"1e-9", 1, 1, 1},
      {"1e-10", 1, 1, 1},  // 0.1n rounds away from zero to 1n
      {"-1e-10", -1, 0, 0},
      {"12e15", Int128{12'000'000'000'000'000} * kNano, std::nullopt, 12'000'000'000'000'000},
  };
  for (const ValidCase& c : cases) {
    ExpectParses(c);
  }
}

TEST(QuantityTest, ParsesZero) {
  const std::vector<ValidCase> cases = {
      {"0", 0, 0, 0},      {"-0", 0, 0, 0},     {"+0", 0, 0, 0},
      {"000", 0, 0, 0},    {"0.0", 0, 0, 0},    {"0.", 0, 0, 0},
      {".0", 0, 0, 0},     {"0Ki", 0, 0, 0},    {"0E", 0, 0, 0},
      {"0e99999", 0, 0, 0},  // zero times anything is zero, not out of range
      {"0.000000000000000000000000000000000000000000000000000", 0, 0, 0},
  };
  for (const ValidCase& c : cases) {
    ExpectParses(c);
  }
}

TEST(QuantityTest, HandlesSigns) {
  const std::vector<ValidCase> cases = {
      {"-1", -kNano, -1000, -1},
      {"+1", kNano, 1000, 1},
      {"-100m", -100'000'000, -100, 0},  // ceil(-0.1) = 0
      // ceil(-1.5) = -1. Go's Value() answers -2 here (it rounds away from
      // zero); requests cannot be negative, so only the header's ceil matters.
      {"-1.5", -1'500'000'000, -1500, -1},
      {"-1.5n", -2, 0, 0},  // rounded away from zero at parse: -1.5n → -2n
      {"-1Ki", -1024 * kNano, -1'024'000, -1024},
      {"-0.1n", -1, 0, 0},
  };
  for (const ValidCase& c : cases) {
    ExpectParses(c);
  }
}

TEST(QuantityTest, RoundsAwayFromZeroToNanos) {
  const std::vector<ValidCase> cases = {
      {"0.1n", 1, 1, 1},
      {"0.9n", 1, 1, 1},
      {"1.5n", 2, 1, 1},
      {"1.0000000001", kNano + 1, 1001, 2},  // 1 + 1e-10 → 1.000000001
      {"0.0000000015", 2, 1, 1},             // 1.5n → 2n
      {"0.000000002", 2, 1, 1},              // exactly 2n: no rounding
      {"1.0001", 1'000'100'000, 1001, 2},    // milli 1000.1 → 1001
  };
  for (const ValidCase& c : cases) {
    ExpectParses(c);
  }
}

TEST(QuantityTest, HandlesLongDigitStrings) {
  const std::string many_zeros(200, '0');
  const std::vector<ValidCase> cases = {
      // A single non-zero digit 200 places down still rounds up to 1n.
      {"0." + many_zeros + "1", 1, 1, 1},
      {"1." + many_zeros, kNano, 1000, 1},
      {"1." + many_zeros + "1", kNano + 1, 1001, 2},
      {"2." + std::string(300, '9'), 3 * kNano, 3000, 3},  // 2.999…9 → 3 after rounding
      {many_zeros + "5", 5 * kNano, 5000, 5},
      {many_zeros + "." + many_zeros + "5Gi", 1, 1, 1},  // 5e-201 × 2^30 → 1n
      // 1e41 × 1e-40 = 10: many digits, but a small value
      {"1" + std::string(41, '0') + "e-40", 10 * kNano, 10'000, 10},
      // 1e-41 × 1e42 = 10
      {"0." + std::string(40, '0') + "1e42", 10 * kNano, 10'000, 10},
  };
  for (const ValidCase& c : cases) {
    ExpectParses(c);
  }
}

TEST(QuantityTest, HandlesInt64Limits) {
  const std::vector<ValidCase> cases = {
      {"9223372036854775807", Int128{kInt64Max} * kNano, std::nullopt, kInt64Max},
      // 2^63 is still in range (the magnitude of INT64_MIN) but Value() cannot hold it.
      {"9223372036854775808", (Int128{1} << 63) * kNano, std::nullopt, std::nullopt},
      {"-9223372036854775808", -(Int128{1} << 63) * kNano, std::nullopt, kInt64Min},
      // 9 223 372 036 854 775.807 units: the largest milli-value
      {"9223372036854775807m", Int128{kInt64Max} * 1'000'000, kInt64Max, 9'223'372'036'854'776},
      {"9223372036854775808m", (Int128{1} << 63) * 1'000'000, std::nullopt,
       9'223'372'036'854'776},
      {"9E", Int128{9'000'000'000'000'000'000} * kNano, std::nullopt, 9'000'000'000'000'000'000},
  };
  for (const ValidCase& c : cases) {
    ExpectParses(c);
  }
}

TEST(QuantityTest, CapsBinaryValuesAtInt64Max) {
  const std::vector<ValidCase> cases = {
      {"8Ei", kBinaryCapNanos, std::nullopt, kInt64Max},  // 2^63 → 2^63 - 1
      {"-8Ei", -kBinaryCapNanos, std::nullopt, -kInt64Max},
      {"16Ei", kBinaryCapNanos, std::nullopt, kInt64Max},
      {"8192Pi", kBinaryCapNanos, std::nullopt, kInt64Max},  // 2^13 × 2^50 = 2^63
      {"1" + std::string(60, '0') + "Ki", kBinaryCapNanos, std::nullopt, kInt64Max},
      // 7.5 × 2^60 = 8 646 911 284 551 352 320 is below the cap: kept exactly
      {"7.5Ei", Int128{8'646'911'284'551'352'320ULL} * kNano, std::nullopt,
       8'646'911'284'551'352'320LL},
  };
  for (const ValidCase& c : cases) {
    ExpectParses(c);
  }
}

TEST(QuantityTest, RejectsInvalidForms) {
  const std::vector<std::string> cases = {
      // from the protocol table
      "1e", "1Ki5", "1.2.3", "0x10", "1 Gi", "4K",
      // from apimachinery's own invalid list
      "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 ",
      // no number at all (Go reads these as 0; the grammar requires a digit)
      "", ".", "-", "+", "-.", "Ki", "m", "e3", "E",
      // bad signs, suffixes and exponents
      "--1", "+-1", "1-", "1e+", "1E-", "1ee3", "1Ee3", "1e1.5", "1e3Ki", "1KI", "1ki", "1Mib",
      "1k1", "1eK",
      // other characters
      "1,5", "1_000", "1\t", "\t1", "1\n", std::string("1\0", 2), "\xef\xbc\x91",  // fullwidth 1
  };
  for (const std::string& text : cases) {
    SCOPED_TRACE("input \"" + text + "\"");
    StatusOr<Quantity> q = Quantity::Parse(text);
    ASSERT_FALSE(q.ok());
    EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(q.status().message().rfind("invalid quantity \"", 0), 0u) << q.status().message();
  }
}

TEST(QuantityTest, ReportsOutOfRange) {
  const std::vector<std::string> cases = {
      "99999E",
      "10E",                   // 1e19 > 2^63
      "9223372036854775809",   // 2^63 + 1
      "-9223372036854775809",  // below -2^63
      "1" + std::string(40, '0'),
      "1e19",
      "1e9999999999999999999999999",  // huge exponents are clamped, still out of range
      "-1e9999999999999999999999999",
      "1" + std::string(30, '0') + "n",  // 1e30 n = 1e21 units
  };
  for (const std::string& text : cases) {
    SCOPED_TRACE("input \"" + text + "\"");
    StatusOr<Quantity> q = Quantity::Parse(text);
    ASSERT_FALSE(q.ok());
    EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(q.status().message().find("is out of range"), std::string::npos)
        << q.status().message();
  }
}

TEST(QuantityTest, HugeNegativeExponentGivesSmallestNonZero) {
  ExpectParses({"1e-9999999999999999999999999", 1, 1, 1});
  ExpectParses({"-7e-999999999", -1, 0, 0});
}

TEST(QuantityTest, ErrorMessagesQuoteTheInput) {
  EXPECT_EQ(Quantity::Parse("5x").status(), InvalidArgumentError("invalid quantity \"5x\""));
  EXPECT_EQ(Quantity::Parse("").status(), InvalidArgumentError("invalid quantity \"\""));
  EXPECT_EQ(Quantity::Parse("99999E").status(),
            InvalidArgumentError("quantity \"99999E\" is out of range"));
}

TEST(QuantityTest, ErrorMessagesTruncateLongInput) {
  const std::string text = std::string(100, '7') + "x";
  Status status = Quantity::Parse(text).status();
  EXPECT_EQ(status.message(), "invalid quantity \"" + std::string(40, '7') + "...\"");

  // A cut never splits a UTF-8 sequence: "é" is 2 bytes and would straddle byte 40.
  const std::string accented = std::string(39, '1') + "\xc3\xa9" + std::string(20, '1');
  status = Quantity::Parse(accented).status();
  EXPECT_EQ(status.message(), "invalid quantity \"" + std::string(39, '1') + "...\"");
}

TEST(QuantityTest, DefaultIsZero) {
  Quantity q;
  EXPECT_TRUE(q.is_zero());
  EXPECT_EQ(*q.Milli(), 0);
  EXPECT_EQ(*q.Value(), 0);
}

struct AmountCase {
  std::string name;
  std::string text;
  int64_t amount;
};

TEST(ParseResourceAmountTest, UsesMilliForCpuAndValueOtherwise) {
  const std::vector<AmountCase> cases = {
      {"cpu", "100m", 100},
      {"cpu", "2", 2000},
      {"cpu", "1.5m", 2},  // ceil(1.5)
      {"memory", "1Gi", 1'073'741'824},
      {"memory", "100m", 1},  // ceil(0.1)
      {"memory", "1E", 1'000'000'000'000'000'000},
      {"ephemeral-storage", "1.1Ki", 1127},
      {"pods", "110", 110},
      {"hugepages-2Mi", "4Mi", 4'194'304},
      {"example.com/gpu", "2", 2},
      {"example.com/gpu", "500m", 1},
  };
  for (const AmountCase& c : cases) {
    SCOPED_TRACE(c.name + "=" + c.text);
    StatusOr<int64_t> amount = ParseResourceAmount(c.name, c.text);
    ASSERT_TRUE(amount.ok()) << amount.status().ToString();
    EXPECT_EQ(*amount, c.amount);
  }
}

TEST(ParseResourceAmountTest, PrefixesErrorsWithTheResourceName) {
  EXPECT_EQ(ParseResourceAmount("cpu", "5x").status(),
            InvalidArgumentError("cpu: invalid quantity \"5x\""));
  EXPECT_EQ(ParseResourceAmount("memory", "99999E").status(),
            InvalidArgumentError("memory: quantity \"99999E\" is out of range"));
  // Parses, but 1e18 cores is no int64 of milli-cores.
  EXPECT_EQ(ParseResourceAmount("cpu", "1E").status(),
            InvalidArgumentError("cpu: quantity \"1E\" is out of range"));
  EXPECT_EQ(ParseResourceAmount("memory", "9223372036854775808").status(),
            InvalidArgumentError("memory: quantity \"9223372036854775808\" is out of range"));
}

}  // namespace
}  // namespace schedext::model
