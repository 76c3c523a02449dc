#include "common/civil_time.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace schedext {
namespace {

TEST(CivilTimeTest, ParsesTheFixedLayoutAsUtc) {
  int64_t t = 0;
  ASSERT_TRUE(ParseCivilDateTime("2024-01-23 04:30:04", ' ', t));
  EXPECT_EQ(t, 1705984204);
  ASSERT_TRUE(ParseCivilDateTime("1970-01-01T00:00:00", 'T', t));
  EXPECT_EQ(t, 0);
  ASSERT_TRUE(ParseCivilDateTime("2024-02-29 23:59:59", ' ', t));
  EXPECT_EQ(t, 1709251199);
  for (const char* bad : {"2024-01-23T04:30:04", "2024-01-23 04:30:4", "2024-13-01 00:00:00",
                          "2024-01-23 24:00:00", "2024-01-23 04:30:04Z", "yesterday", ""}) {
    EXPECT_FALSE(ParseCivilDateTime(bad, ' ', t)) << bad;
  }
}

TEST(CivilTimeTest, ReadsRfc3339AsGoWritesIt) {
  int64_t t = 0;
  ASSERT_TRUE(ParseRfc3339("2024-01-23T04:30:04Z", t));
  EXPECT_EQ(t, 1705984204);
  ASSERT_TRUE(ParseRfc3339("2024-01-23T12:30:04+08:00", t));
  EXPECT_EQ(t, 1705984204);
  ASSERT_TRUE(ParseRfc3339("2024-01-22T23:00:04-05:30", t));
  EXPECT_EQ(t, 1705984204);
  ASSERT_TRUE(ParseRfc3339("2024-01-23T04:30:04.123456789Z", t));
  EXPECT_EQ(t, 1705984204);
  for (const char* bad : {"2024-01-23 04:30:04Z", "2024-01-23T04:30:04", "2024-01-23T04:30:04.Z",
                          "2024-01-23T04:30:04+0800", "2024-01-23T04:30:04+08:00x",
                          "2024-01-23T04:30:04Zx", "2024-01-23T04:30:04+24:00"}) {
    EXPECT_FALSE(ParseRfc3339(bad, t)) << bad;
  }
}

TEST(CivilTimeTest, FormatsUtcAndReadsBack) {
  char buffer[32];
  EXPECT_EQ(FormatRfc3339Utc(1705984204, buffer), "2024-01-23T04:30:04Z");
  EXPECT_EQ(FormatRfc3339Utc(0, buffer), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339Utc(-1, buffer), "1969-12-31T23:59:59Z");
  for (int64_t t = -86400LL * 800; t < 86400LL * 365 * 60; t += 86400LL * 13 + 3671) {
    int64_t back = 0;
    const std::string text(FormatRfc3339Utc(t, buffer));
    ASSERT_TRUE(ParseRfc3339(text, back)) << text;
    EXPECT_EQ(back, t) << text;
  }
}

}  // namespace
}  // namespace schedext
