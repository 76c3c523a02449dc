#include "common/host_port.h"

#include <gtest/gtest.h>

namespace schedext {
namespace {

TEST(SplitHostPortTest, SplitsEveryShapeOfAnAuthority) {
  struct Case {
    std::string_view in, host;
    std::optional<std::string_view> port;
    bool bracketed;
  };
  for (const Case& c : {Case{"example.com", "example.com", std::nullopt, false},
                        Case{"example.com:8443", "example.com", "8443", false},
                        Case{"10.0.0.1:", "10.0.0.1", "", false},
                        Case{":8888", "", "8888", false},
                        Case{"", "", std::nullopt, false},
                        Case{"[::1]", "::1", std::nullopt, true},
                        Case{"[fe80::1%eth0]:9090", "fe80::1%eth0", "9090", true},
                        Case{"[]:80", "", "80", true}}) {
    SCOPED_TRACE(c.in);
    const StatusOr<HostPort> split = SplitHostPort(c.in);
    ASSERT_TRUE(split.ok()) << split.status().message();
    EXPECT_EQ(split->host, c.host);
    EXPECT_EQ(split->port, c.port);
    EXPECT_EQ(split->bracketed, c.bracketed);
  }
}

TEST(SplitHostPortTest, RefusesWhatHasNoSingleReading) {
  struct Case {
    std::string_view in, message;
  };
  for (const Case& c :
       {Case{"::1:8080", "an IPv6 address must be in brackets, as in \"[::1]:8888\""},
        Case{"a:b:c", "an IPv6 address must be in brackets, as in \"[::1]:8888\""},
        Case{"[::1:8080", "missing ']' after the IPv6 address"},
        Case{"[::1]8080", "unexpected text after the IPv6 address"}}) {
    SCOPED_TRACE(c.in);
    const StatusOr<HostPort> split = SplitHostPort(c.in);
    ASSERT_FALSE(split.ok());
    EXPECT_EQ(split.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(split.status().message(), c.message);
  }
}

TEST(ParsePortNumberTest, TakesOnlyPlainDigitsInRange) {
  EXPECT_EQ(ParsePortNumber("0", 0), 0);
  EXPECT_EQ(ParsePortNumber("65535", 1), 65535);
  EXPECT_EQ(ParsePortNumber("00080", 1), 80);
  EXPECT_EQ(ParsePortNumber("0", 1), std::nullopt);
  EXPECT_EQ(ParsePortNumber("65536", 0), std::nullopt);
  EXPECT_EQ(ParsePortNumber("000080", 0), std::nullopt);  // six digits
  EXPECT_EQ(ParsePortNumber("", 0), std::nullopt);
  EXPECT_EQ(ParsePortNumber("+80", 0), std::nullopt);
  EXPECT_EQ(ParsePortNumber("-1", 0), std::nullopt);
  EXPECT_EQ(ParsePortNumber("8 0", 0), std::nullopt);
  EXPECT_EQ(ParsePortNumber("80a", 0), std::nullopt);
}

}  // namespace
}  // namespace schedext
