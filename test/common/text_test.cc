#include "common/text.h"

#include <array>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>

#include "common/file.h"

namespace schedext {
namespace {

TEST(QuoteTest, EscapesQuotesBackslashesAndControlBytes) {
  EXPECT_EQ(Quote("plain"), "\"plain\"");
  EXPECT_EQ(Quote(""), "\"\"");
  EXPECT_EQ(Quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Quote("line\nforged"), "\"line\\x0aforged\"");
  EXPECT_EQ(Quote(std::string_view("nul\0del\x7f", 8)), "\"nul\\x00del\\x7f\"");
  EXPECT_EQ(Quote("gpu-\xc3\xa9"), "\"gpu-\xc3\xa9\"");  // UTF-8 passes through
}

TEST(QuoteTest, ShortCutsLongTextOnAUtf8Boundary) {
  EXPECT_EQ(QuoteShort("12Gi"), "\"12Gi\"");
  EXPECT_EQ(QuoteShort(std::string(40, 'x')), "\"" + std::string(40, 'x') + "\"");
  EXPECT_EQ(QuoteShort(std::string(41, 'x')), "\"" + std::string(40, 'x') + "...\"");
  // "é" is two bytes; a cut at 4 would split the second one.
  EXPECT_EQ(QuoteShort("abc\xc3\xa9z", 4), "\"abc...\"");
  EXPECT_EQ(QuoteShort("ab\n\ncdef", 4), "\"ab\\x0a\\x0a...\"");
}

TEST(TrimSpaceTest, TrimsAsciiWhitespaceOnBothEnds) {
  EXPECT_EQ(TrimSpace("  token\r\n"), "token");
  EXPECT_EQ(TrimSpace("\t a b \v\f"), "a b");
  EXPECT_EQ(TrimSpace(" \n\t "), "");
  EXPECT_EQ(TrimSpace(""), "");
  EXPECT_EQ(TrimSpace("x"), "x");
}

TEST(TrimBlanksTest, TrimsSpacesAndTabsOnly) {
  EXPECT_EQ(TrimBlanks(" \t gzip, br\t "), "gzip, br");
  EXPECT_EQ(TrimBlanks(" \t "), "");
  EXPECT_EQ(TrimBlanks(""), "");
  EXPECT_EQ(TrimBlanks("x"), "x");
  // Not other whitespace: a CR stays for the framing's own checks to see.
  EXPECT_EQ(TrimBlanks(" chunked\r"), "chunked\r");
  EXPECT_EQ(TrimBlanks("\v1\f"), "\v1\f");
}

TEST(JoinNamesTest, JoinsWithCommas) {
  constexpr std::array<std::string_view, 3> kNames = {"filter", "prioritize", "bind"};
  EXPECT_EQ(JoinNames(kNames), "filter, prioritize, bind");
  EXPECT_EQ(JoinNames(std::span<const std::string_view>()), "");
}

TEST(FormatNumberTest, ShortestTextThatReadsBack) {
  EXPECT_EQ(FormatNumber(0), "0");
  EXPECT_EQ(FormatNumber(100), "100");
  EXPECT_EQ(FormatNumber(0.8), "0.8");
  EXPECT_EQ(FormatNumber(-2.5), "-2.5");
  EXPECT_EQ(FormatNumber(1e21), "1e+21");
  EXPECT_EQ(FormatNumber(0.1 + 0.2), "0.30000000000000004");
}

class ReadFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("schedext-read-file-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(ReadFileTest, ReadsBytesExactly) {
  const std::string path = (dir_ / "token").string();
  const std::string bytes("abc\0\r\ndef", 9);
  std::ofstream(path, std::ios::binary) << bytes;
  StatusOr<std::string> got = ReadFile(path, "token file");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, bytes);
}

TEST_F(ReadFileTest, MissingFileAndDirectoryAreErrorsNamingThePath) {
  const std::string missing = (dir_ / "missing").string();
  StatusOr<std::string> got = ReadFile(missing, "CA");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(got.status().message(), "CA \"" + missing + "\": No such file or directory");
  StatusOr<std::string> dir = ReadFile(dir_.string());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(dir.status().message(), "read \"" + dir_.string() + "\": Is a directory");
}

TEST_F(ReadFileTest, StopsReadingPastTheBound) {
  const std::string path = (dir_ / "big").string();
  std::ofstream(path, std::ios::binary) << std::string(100, 'x');
  StatusOr<std::string> exact = ReadFile(path, "config", 100);
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  EXPECT_EQ(exact->size(), 100u);
  StatusOr<std::string> over = ReadFile(path, "config", 99);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(over.status().message(), "config \"" + path + "\": larger than 99 bytes");
  // A file without an end (a key pointed at a device) ends at the bound too.
  StatusOr<std::string> endless = ReadFile("/dev/zero", "token file", 1 << 20);
  ASSERT_FALSE(endless.ok());
  EXPECT_EQ(endless.status().message(), "token file \"/dev/zero\": larger than 1048576 bytes");
}

}  // namespace
}  // namespace schedext
